//! The daemon (`rivumi-mcp daemon`): warm stdio servers between
//! invocations, driven through the real binary with real processes. Each
//! test runs its own daemon in the foreground with `XDG_RUNTIME_DIR`
//! pointing into its directory, and every invocation is the real client.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{
    Dir, Output, TestCommand, assert_contains, assert_pids_gone,
    demo_recording, demo_with_pids, fixture_server, read_pids, run_allowed,
    write_mcp_json,
};

/// A daemon started in the foreground for one test; SIGTERM on drop. Every
/// command of its `Dir` reaches it (their `XDG_RUNTIME_DIR` is its).
pub(crate) struct Daemon {
    child: Option<Child>,
    run: PathBuf,
    log: PathBuf,
}

impl Daemon {
    pub(crate) fn start(dir: &Dir, extra: &[&str]) -> Daemon {
        let run = runtime_dir(dir);
        let log = dir.path("daemon.out");
        let mut args = vec!["daemon", "start", "--foreground", "-v"];
        args.extend_from_slice(extra);
        let mut cmd = dir.command(&args);
        cmd.env("XDG_RUNTIME_DIR", &run);
        let out = std::fs::File::create(&log).unwrap();
        let child = cmd
            .std_command()
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        let d = Daemon { child: Some(child), run, log };
        let start = Instant::now();
        // Listening (a stale socket file may have been there before).
        while !d.log_text().contains("listening on") {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the daemon did not start: {}",
                d.log_text()
            );
            thread::sleep(Duration::from_millis(20));
        }
        d
    }

    fn socket(&self) -> PathBuf {
        self.run.join("rivumi-mcp/daemon.sock")
    }

    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Waits for the daemon process to end; its exit status.
    pub(crate) fn wait(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().unwrap();
        let start = Instant::now();
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                return st;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the daemon did not exit"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            send_signal(c.id(), "TERM");
            let start = Instant::now();
            while c.try_wait().ok().flatten().is_none() {
                if start.elapsed() > Duration::from_secs(10) {
                    let _ = c.kill();
                    let _ = c.wait();
                    break;
                }
                thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Sends a signal with kill(1) (the tests use no libc).
fn send_signal(pid: u32, sig: &str) {
    let _ = std::process::Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .status();
}

/// `<dir>/run`, 0700, as `$XDG_RUNTIME_DIR`.
fn runtime_dir(dir: &Dir) -> PathBuf {
    let run = dir.path("run");
    if !run.exists() {
        std::fs::create_dir(&run).unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700))
            .unwrap();
    }
    run
}

/// `rivumi-mcp ARGS` with the allowlist and the daemon's directory set.
fn warm(dir: &Dir, args: &[&str]) -> TestCommand {
    let mut c = run_allowed(dir, "demo", args);
    c.env("XDG_RUNTIME_DIR", runtime_dir(dir));
    c
}

/// `rivumi-mcp ARGS` with `allow` as the allowlist; cold (`--no-daemon`)
/// when `cold`.
fn run_with(dir: &Dir, allow: &str, args: &[&str], cold: bool) -> Output {
    let mut all = args.to_vec();
    if cold {
        all.push("--no-daemon");
    }
    let mut c = warm(dir, &all);
    c.env("RIVUMI_MCP_ALLOWLIST", allow);
    c.run()
}

pub(crate) fn status(dir: &Dir) -> Value {
    warm(dir, &["daemon", "status", "--json"]).assert_exit(0).stdout_json()
}

pub(crate) fn servers(dir: &Dir) -> Vec<Value> {
    status(dir)["servers"].as_array().cloned().unwrap_or_default()
}

fn same_output(a: &Output, b: &Output) {
    assert_eq!(a.code, b.code, "exit codes differ:\n{}\n{}", a.all(), b.all());
    assert_eq!(a.stdout, b.stdout, "stdout differs");
    assert_eq!(a.stderr, b.stderr, "stderr differs");
}

#[test]
fn daemon_warm_call_and_list_are_as_cold_and_the_server_stays() {
    let (dir, pids) = demo_with_pids("daemon_warm", &[]);
    let cold_call = warm(&dir, &["call", "demo", "echo", "text=hi", "--json"])
        .assert_exit(0);
    let cold_list = warm(&dir, &["list", "demo", "--json"]).assert_exit(0);
    assert_eq!(read_pids(&pids).len(), 2, "cold runs start a server each");
    let _d = Daemon::start(&dir, &[]);
    let journal = dir.path("journal.jsonl");
    let j = journal.to_str().unwrap();
    for _ in 0..3 {
        let c = warm(
            &dir,
            &["call", "demo", "echo", "text=hi", "--json", "--journal", j],
        )
        .assert_exit(0);
        same_output(&cold_call, &c);
        let l = warm(&dir, &["list", "demo", "--json"]).assert_exit(0);
        same_output(&cold_list, &l);
    }
    assert_eq!(read_pids(&pids).len(), 3, "one warm server for six runs");
    let s = servers(&dir);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0]["name"], "demo");
    assert_eq!(s[0]["transport"], "stdio");
    assert_eq!(s[0]["in_flight"], 0);
    assert_eq!(s[0]["pid"], json!(read_pids(&pids)[2]));
    assert!(s[0]["calls"].as_u64().unwrap() >= 6, "{s:?}");
    let text = std::fs::read_to_string(&journal).unwrap();
    assert_contains(&text, "\"warm\":true");
    assert!(!text.contains("\"warm\":false"), "{text}");
    // The human status names it too.
    let human = warm(&dir, &["daemon", "status"]).assert_exit(0);
    assert_contains(&human.stdout, "FINGERPRINT");
    assert_contains(&human.stdout, "demo");
    assert_contains(&human.stdout, s[0]["fingerprint"].as_str().unwrap());
}

#[test]
fn daemon_is_bypassed_by_no_daemon_and_the_variable() {
    let (dir, pids) = demo_with_pids("daemon_bypass", &[]);
    let _d = Daemon::start(&dir, &[]);
    warm(&dir, &["call", "demo", "echo", "text=a"]).assert_exit(0);
    assert_eq!(read_pids(&pids).len(), 1);
    let calls = servers(&dir)[0]["calls"].clone();
    warm(&dir, &["call", "demo", "echo", "text=a", "--no-daemon"])
        .assert_exit(0);
    let mut c = warm(&dir, &["call", "demo", "echo", "text=a"]);
    c.env("RIVUMI_MCP_DAEMON", "off");
    c.assert_exit(0);
    assert_eq!(read_pids(&pids).len(), 3, "both ran cold");
    assert_eq!(servers(&dir)[0]["calls"], calls);
}

/// `n` invocations at once of `call SERVER echo KEY=caller-I`, each of
/// which must end 0 and print `shown(caller-I)`, its own answer.
fn parallel_echoes(
    dir: &Dir,
    server: &str,
    key: &str,
    n: usize,
    shown: impl Fn(&str) -> String,
) {
    let children: Vec<(String, Child, TestCommand)> = (0..n)
        .map(|i| {
            let text = format!("caller-{i}");
            let arg = format!("{key}={text}");
            let mut c = warm(dir, &["call", server, "echo", &arg]);
            c.env("RIVUMI_MCP_ALLOWLIST", server);
            let child = c.spawn();
            (text, child, c)
        })
        .collect();
    for (text, child, c) in children {
        let out = crate::util::wait_with_timeout(child, &c);
        assert_eq!(out.code, Some(0), "{}", out.all());
        assert_eq!(out.stdout.trim(), shown(&text));
    }
}

#[test]
fn daemon_ten_parallel_callers_each_get_their_own_answer() {
    let (dir, pids) = demo_with_pids("daemon_parallel", &[]);
    let _d = Daemon::start(&dir, &[]);
    warm(&dir, &["call", "demo", "echo", "text=warm"]).assert_exit(0);
    parallel_echoes(&dir, "demo", "text", 10, str::to_string);
    assert_eq!(read_pids(&pids).len(), 1, "one server for all");
    assert!(servers(&dir)[0]["calls"].as_u64().unwrap() >= 11);
}

/// The raw messages a `--record` fixture received.
fn recorded(rec: &Path) -> Vec<Value> {
    std::fs::read_to_string(rec)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(20), "never: {what}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the server recorded a `notifications/cancelled` of the
/// `slow` call it received (with `reason`, when given).
fn wait_for_cancel_of_slow(rec: &Path, reason: Option<&str>) {
    let slow_id = recorded(rec)
        .iter()
        .find(|m| m["params"]["name"] == "slow")
        .map(|m| m["id"].clone())
        .unwrap();
    wait_for("the cancellation reaches the server", || {
        recorded(rec).iter().any(|m| {
            m["method"] == "notifications/cancelled"
                && m["params"]["requestId"] == slow_id
                && reason.is_none_or(|r| m["params"]["reason"] == r)
        })
    });
}

#[test]
fn daemon_cancels_the_request_of_a_caller_killed_mid_call() {
    let (dir, rec) = demo_recording("daemon_killed");
    let _d = Daemon::start(&dir, &[]);
    warm(&dir, &["call", "demo", "echo", "text=warm"]).assert_exit(0);
    let c = warm(&dir, &["call", "-y", "demo", "slow", "ms:=1500"]);
    let mut victim = c.spawn();
    wait_for("the slow call reaches the server", || {
        recorded(&rec).iter().any(|m| m["params"]["name"] == "slow")
    });
    let other = warm(&dir, &["call", "demo", "echo", "text=other"]);
    let other_child = other.spawn();
    victim.kill().unwrap();
    let _ = victim.wait();
    let out = crate::util::wait_with_timeout(other_child, &other);
    assert_eq!(out.code, Some(0), "{}", out.all());
    assert_eq!(out.stdout.trim(), "other");
    wait_for_cancel_of_slow(&rec, None);
    // The server is still warm and serves the next caller.
    let next =
        warm(&dir, &["call", "demo", "echo", "text=next"]).assert_exit(0);
    assert_eq!(next.stdout.trim(), "next");
    assert_eq!(
        recorded(&rec).iter().filter(|m| m["method"] == "initialize").count(),
        1
    );
}

#[test]
fn daemon_server_crash_fails_the_call_as_cold_and_restarts() {
    let (dir, pids) = demo_with_pids("daemon_crash", &["--exit-at-call"]);
    let cold = warm(&dir, &["call", "demo", "echo", "text=x"]).run();
    let _d = Daemon::start(&dir, &[]);
    let first = warm(&dir, &["call", "demo", "echo", "text=x"]).run();
    assert_eq!(first.code, cold.code, "{}\n{}", first.all(), cold.all());
    assert_eq!(first.code, Some(4));
    assert_contains(&first.stderr, "demo");
    // The next invocation gets a new server.
    warm(&dir, &["list", "demo"]).assert_exit(0);
    assert_eq!(read_pids(&pids).len(), 3, "cold, crashed, restarted");
    let s = servers(&dir);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["pid"], json!(read_pids(&pids)[2]));
}

#[test]
fn daemon_a_changed_launch_is_another_server_and_the_old_retires() {
    let (dir, pids) = demo_with_pids("daemon_changed", &[]);
    let _d = Daemon::start(&dir, &["--idle", "2"]);
    warm(&dir, &["call", "-y", "demo", "env"]).assert_exit(0);
    let mut c = warm(&dir, &["call", "demo", "echo", "text=b"]);
    c.env("TZ", "UTC");
    c.assert_exit(0);
    let s = servers(&dir);
    assert_eq!(s.len(), 2, "a changed environment is another key: {s:?}");
    assert_ne!(s[0]["fingerprint"], s[1]["fingerprint"]);
    assert_eq!(read_pids(&pids).len(), 2);
    // Nobody uses either: both retire after --idle, their processes gone.
    wait_for("idle servers retire", || servers(&dir).is_empty());
    assert_pids_gone(&pids, Duration::from_secs(5));
}

#[test]
fn daemon_stop_leaves_no_process_and_no_socket() {
    let (dir, pids) = demo_with_pids("daemon_stop", &["--grandchild"]);
    let mut d = Daemon::start(&dir, &[]);
    warm(&dir, &["call", "demo", "echo", "text=a"]).assert_exit(0);
    let out = warm(&dir, &["daemon", "stop"]).assert_exit(0);
    assert_contains(&out.stdout, "daemon stopped");
    assert!(d.wait().success());
    assert!(!d.socket().exists());
    assert_pids_gone(&pids, Duration::from_secs(5));
    let none = warm(&dir, &["daemon", "status"]).assert_exit(1);
    assert_contains(&none.stderr, "no daemon is running");
}

#[test]
fn daemon_sigterm_closes_every_server() {
    let (dir, pids) = demo_with_pids("daemon_sigterm", &["--grandchild"]);
    let mut d = Daemon::start(&dir, &[]);
    warm(&dir, &["call", "demo", "echo", "text=a"]).assert_exit(0);
    send_signal(d.pid(), "TERM");
    let st = d.wait();
    assert_eq!(st.code(), Some(143), "{}", d.log_text());
    assert!(!d.socket().exists());
    assert_pids_gone(&pids, Duration::from_secs(5));
}

#[test]
fn daemon_a_request_that_times_out_retires_the_server() {
    let (dir, pids) = demo_with_pids("daemon_timeout", &[]);
    let _d = Daemon::start(&dir, &[]);
    let cold = warm(
        &dir,
        &[
            "call",
            "-y",
            "demo",
            "slow",
            "ms:=3000",
            "--timeout",
            "0.5",
            "--no-daemon",
        ],
    )
    .run();
    let out = warm(
        &dir,
        &["call", "-y", "demo", "slow", "ms:=3000", "--timeout", "0.5"],
    )
    .run();
    assert_eq!(out.code, Some(5), "{}", out.all());
    assert_eq!(out.stderr, cold.stderr);
    wait_for("the timed-out server is retired", || servers(&dir).is_empty());
    warm(&dir, &["call", "demo", "echo", "text=a"]).assert_exit(0);
    assert_eq!(read_pids(&pids).len(), 3, "cold, timed out, fresh");
}

#[test]
fn daemon_stale_socket_runs_cold_then_is_replaced() {
    let (dir, pids) = demo_with_pids("daemon_stale", &[]);
    let run = runtime_dir(&dir);
    let d = run.join("rivumi-mcp");
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700))
        .unwrap();
    drop(
        std::os::unix::net::UnixListener::bind(d.join("daemon.sock")).unwrap(),
    );
    let out =
        warm(&dir, &["call", "demo", "echo", "text=a", "-v"]).assert_exit(0);
    assert_eq!(out.stdout.trim(), "a");
    assert_contains(&out.stderr, "running cold");
    assert_contains(&out.stderr, "stale socket");
    assert_eq!(out.stderr.matches("running cold").count(), 1);
    let _d = Daemon::start(&dir, &[]);
    warm(&dir, &["call", "demo", "echo", "text=b"]).assert_exit(0);
    assert_eq!(servers(&dir).len(), 1);
    assert_eq!(read_pids(&pids).len(), 2);
    // A second daemon for the same user is refused.
    let second =
        warm(&dir, &["daemon", "start", "--foreground"]).assert_exit(3);
    assert_contains(&second.stderr, "another daemon already runs");
}

#[test]
fn daemon_socket_permissions_and_an_open_directory_refused() {
    let (dir, _) = demo_with_pids("daemon_perms", &[]);
    let d = Daemon::start(&dir, &[]);
    let meta = std::fs::symlink_metadata(d.run.join("rivumi-mcp")).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o700);
    let sock = std::fs::symlink_metadata(d.socket()).unwrap();
    assert_eq!(sock.mode() & 0o777, 0o600);
    drop(d);
    // A directory others may enter is refused, and so is a link.
    let other = Dir::new("daemon_perms_open");
    let run = runtime_dir(&other);
    std::fs::create_dir(run.join("rivumi-mcp")).unwrap();
    std::fs::set_permissions(
        run.join("rivumi-mcp"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let out =
        warm(&other, &["daemon", "start", "--foreground"]).assert_exit(3);
    assert_contains(&out.stderr, "it must be 0700");
    let linked = Dir::new("daemon_perms_link");
    let run = runtime_dir(&linked);
    std::os::unix::fs::symlink(linked.root(), run.join("rivumi-mcp")).unwrap();
    let out =
        warm(&linked, &["daemon", "start", "--foreground"]).assert_exit(3);
    assert_contains(&out.stderr, "is a symbolic link");
}

#[test]
fn daemon_refuses_a_connection_from_another_uid() {
    if not_root() {
        eprintln!("skipped: needs root to run a client as nobody");
        return;
    }
    let (dir, _) = demo_with_pids("daemon_uid", &[]);
    let d = Daemon::start(&dir, &[]);
    // Let the other user reach the socket: only the peer check is left.
    for (p, mode) in [
        (d.run.clone(), 0o711),
        (d.run.join("rivumi-mcp"), 0o711),
        (d.socket(), 0o666),
    ] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
            .unwrap();
    }
    let mut open = dir.root().to_path_buf();
    while let Some(parent) = open.parent().map(Path::to_path_buf) {
        let m = std::fs::metadata(&open).unwrap().mode();
        std::fs::set_permissions(
            &open,
            std::fs::Permissions::from_mode(m | 0o711),
        )
        .unwrap();
        if parent == Path::new("/") || parent == std::env::temp_dir() {
            break;
        }
        open = parent;
    }
    let c = warm(&dir, &["daemon", "status"]);
    let ours = c.std_command();
    // A copy of the binary the other user can run wherever the checkout
    // is (a clone in a 0700 directory would deny it the original).
    let copy = dir.path("rivumi-mcp");
    std::fs::copy(crate::util::bin(), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755))
        .unwrap();
    let mut cmd = {
        let mut other = std::process::Command::new(&copy);
        other.args(ours.get_args()).env_clear();
        for (k, v) in ours.get_envs() {
            if let Some(v) = v {
                other.env(k, v);
            }
        }
        if let Some(cwd) = ours.get_current_dir() {
            other.current_dir(cwd);
        }
        other
    };
    cmd.uid(65534).gid(65534);
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    wait_for("the refusal is logged", || {
        d.log_text().contains("refused a connection from uid 65534")
    });
}

/// Whether this test runs as another user than root.
fn not_root() -> bool {
    let out = std::process::Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() != "0"
}

#[test]
fn daemon_lock_hooks_and_approval_are_enforced_as_cold() {
    let (dir, _) = demo_with_pids("daemon_checks", &[]);
    let _d = Daemon::start(&dir, &[]);
    warm(&dir, &["lock"]).assert_exit(0);
    // A drifted server: one more tool than the lock knows.
    let pids = dir.path("pids");
    let pid_arg = format!("--pid-file={}", pids.display());
    write_mcp_json(
        &dir,
        &[("demo", fixture_server(&["--extra-tool", "sneaky", &pid_arg]))],
    );
    for args in [
        &["list", "demo"][..],
        &["call", "demo", "sneaky"][..],
        &["call", "--pre-tool-hook", "false", "demo", "echo", "text=a"][..],
        &["call", "demo", "add", "a:=1", "b:=2"][..],
    ] {
        let mut cold_args = args.to_vec();
        cold_args.push("--no-daemon");
        let cold = warm(&dir, &cold_args).run();
        let hot = warm(&dir, args).run();
        same_output(&cold, &hot);
        if args[0] == "call" {
            assert_ne!(hot.code, Some(0), "{args:?}: {}", hot.all());
        }
    }
    assert_eq!(servers(&dir).len(), 2, "the changed entry runs warm too");
}

#[test]
fn daemon_elicitation_is_answered_by_the_calling_invocation() {
    let dir = Dir::new("daemon_elicit");
    let form = json!({"method": "elicitation/create", "params": {
        "message": "Who are you?",
        "requestedSchema": {"type": "object", "properties": {
            "age": {"type": "integer", "title": "Age"}},
          "required": ["age"]}}});
    let file = dir.write("asks.json", json!([form]).to_string());
    write_mcp_json(
        &dir,
        &[(
            "demo",
            fixture_server(&["--ask-at-call", file.to_str().unwrap()]),
        )],
    );
    let _d = Daemon::start(&dir, &[]);
    for age in ["40", "41"] {
        let a = format!("age={age}");
        let args = ["call", "-y", "demo", "echo", "text=x", "--answer", &a];
        let cold = {
            let mut v = args.to_vec();
            v.push("--no-daemon");
            warm(&dir, &v).assert_exit(0)
        };
        let hot = warm(&dir, &args).assert_exit(0);
        same_output(&cold, &hot);
        let got: Value = serde_json::from_str(hot.stdout.trim()).unwrap();
        assert_eq!(
            got[0]["content"]["age"],
            json!(age.parse::<u64>().unwrap())
        );
    }
    assert_eq!(servers(&dir).len(), 1);
}

#[test]
fn daemon_an_unreachable_daemon_is_never_fatal() {
    // Another build's answer is a version mismatch: the command runs cold.
    let (dir, _) = demo_with_pids("daemon_version", &[]);
    let run = runtime_dir(&dir);
    let d = run.join("rivumi-mcp");
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700))
        .unwrap();
    let listener =
        std::os::unix::net::UnixListener::bind(d.join("daemon.sock")).unwrap();
    let fake = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(s.try_clone().unwrap()),
            &mut line,
        )
        .unwrap();
        writeln!(s, "{}", json!({"ok": false, "why": "version", "error": "the daemon is rivumi-mcp 9.9.9"})).unwrap();
        line
    });
    let out =
        warm(&dir, &["call", "demo", "echo", "text=a", "-v"]).assert_exit(0);
    assert_eq!(out.stdout.trim(), "a");
    assert_contains(&out.stderr, "running cold");
    assert_contains(&out.stderr, "9.9.9");
    let asked: Value = serde_json::from_str(&fake.join().unwrap()).unwrap();
    assert_eq!(asked["op"], "open");
    assert_eq!(asked["rivumi_daemon"], 1);
}

// ---- real servers --------------------------------------------------------

/// server-everything (Node) and two Python SDK servers over stdio, warm:
/// the same output as cold, elicitation answered by the calling
/// invocation's `--answer`, one process per server, none left after
/// `daemon stop`.
#[test]
fn daemon_interop_real_servers_warm_as_cold() {
    use crate::util::interop::{Turn, assert_no_leftovers, installed};
    let Some(s) = installed("daemon_interop", &[]) else { return };
    let turn = Turn::take("interop", "daemon_interop");
    let marker = turn.marker.clone();
    write_mcp_json(
        &turn.dir,
        &[
            (
                "everything",
                json!({"command": s.node,
                       "args": [s.everything_js, "stdio", &marker]}),
            ),
            (
                "py",
                json!({"command": s.python,
                       "args": ["-X", format!("{marker}=1"), s.py_server]}),
            ),
            (
                "pe",
                json!({"command": s.python,
                       "args": ["-X", format!("{marker}=1"),
                                s.py_server.with_file_name("py_elicit.py")]}),
            ),
        ],
    );
    let dir = &turn.dir;
    let run = |args: &[&str], cold: bool| {
        run_with(dir, "everything,py,pe", args, cold)
    };
    let root = dir.path("a root");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.to_str().unwrap();
    // Roots are part of the key; the daemon answers `roots/list` with
    // them, as cold does.
    let roots = ["call", "-y", "everything", "get-roots-list", "--root", root];
    let cases: [&[&str]; 6] = [
        &["list", "everything"],
        &["call", "everything", "echo", "message=hi", "--json"],
        &["list", "py", "--json"],
        &["call", "py", "echo", "message=warm"],
        &["call", "-y", "pe", "book", "--answer", "seats=2"],
        &roots,
    ];
    let colds: Vec<Output> = cases.iter().map(|a| run(a, true)).collect();
    let mut d = Daemon::start(dir, &[]);
    for _ in 0..2 {
        for (args, cold) in cases.iter().zip(&colds) {
            let hot = run(args, false);
            assert_eq!(hot.code, Some(0), "{args:?}: {}", hot.all());
            assert_eq!(hot.stdout, cold.stdout, "{args:?}");
        }
    }
    assert_eq!(
        run(&["call", "-y", "pe", "book", "--answer", "seats=3"], false)
            .stdout,
        "accept seats=3 name=guest window=false\n"
    );
    let form = [
        "call",
        "-y",
        "everything",
        "trigger-elicitation-request",
        "--elicit",
        "defaults",
        "--answer",
        "name=Ann",
        "--answer",
        "untitledMultipleSelectEnum=Piano,Drums",
    ];
    let out = run(&form, false);
    assert_contains(&out.stdout, "- Name: Ann");
    assert_contains(&colds[5].stdout, "a%20root");
    let st = servers(dir);
    let names: Vec<&str> =
        st.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["everything", "everything", "pe", "py"], "{st:?}");
    warm(dir, &["daemon", "stop"]).assert_exit(0);
    assert!(d.wait().success());
    assert_no_leftovers(&marker, "daemon stop", "rivumi-mcp daemon stop");
}

/// A 2026-07-28-only server (TypeScript SDK v2) over stdio, warm: the
/// daemon's `server/discover` stands for every invocation, each of which
/// sends its own `_meta` envelope.
#[test]
fn daemon_interop_modern_server_warm_as_cold() {
    use crate::util::interop::{Ts2, Ts2Era, Turn, assert_no_leftovers};
    let Some(ts2) = Ts2::installed("daemon_interop_modern") else { return };
    let turn = Turn::take("interop", "daemon_interop_modern");
    let marker = turn.marker.clone();
    write_mcp_json(
        &turn.dir,
        &[("ts2", ts2.stdio_entry(Ts2Era::ModernOnly, &marker))],
    );
    let dir = &turn.dir;
    let run = |args: &[&str], cold: bool| run_with(dir, "ts2", args, cold);
    let cases: [&[&str]; 3] = [
        &["list", "ts2", "--json"],
        &["call", "ts2", "add", "a=2", "b=40"],
        &["call", "-y", "ts2", "whereami", "region=eu", "verbose=true"],
    ];
    let colds: Vec<Output> = cases.iter().map(|a| run(a, true)).collect();
    let mut d = Daemon::start(dir, &[]);
    for _ in 0..2 {
        for (args, cold) in cases.iter().zip(&colds) {
            let hot = run(args, false);
            assert_eq!(hot.code, Some(0), "{args:?}: {}", hot.all());
            assert_eq!(hot.stdout, cold.stdout, "{args:?}");
        }
    }
    let st = servers(dir);
    assert_eq!(st.len(), 1, "{st:?}");
    assert_eq!(st[0]["era"], "2026-07-28");
    warm(dir, &["daemon", "stop"]).assert_exit(0);
    assert!(d.wait().success());
    assert_no_leftovers(&marker, "daemon stop", "rivumi-mcp daemon stop");
}

#[test]
fn daemon_batch_read_prompt_and_lists_are_as_cold() {
    let (dir, pids) = demo_with_pids("daemon_bridges", &[]);
    let cases: [&[&str]; 5] = [
        &["read", "demo", "fixture://docs/readme"],
        &["prompt", "demo", "greet", "name=Ann"],
        &["resources", "demo", "--json"],
        &["prompts", "demo"],
        &["batch"],
    ];
    let lines = "{\"id\":1,\"tool\":\"mcp__demo__echo\",\"arguments\":{\"text\":\"a\"}}\n\
                 {\"id\":2,\"tool\":\"mcp__demo__nope\",\"arguments\":{}}\n\
                 {\"id\":3,\"tool\":\"mcp__demo__echo\",\"arguments\":{\"text\":\"b\"}}\n";
    let run = |args: &[&str], cold: bool| {
        let mut all = args.to_vec();
        if cold {
            all.push("--no-daemon");
        }
        let mut c = warm(&dir, &all);
        if args[0] == "batch" {
            c.stdin(lines);
        }
        c.run()
    };
    let colds: Vec<Output> = cases.iter().map(|a| run(a, true)).collect();
    let _d = Daemon::start(&dir, &[]);
    let before = read_pids(&pids).len();
    for (args, cold) in cases.iter().zip(&colds) {
        let hot = run(args, false);
        same_output(cold, &hot);
        assert!(hot.code == Some(0) || args[0] == "batch", "{}", hot.all());
    }
    assert_contains(&colds[4].stdout, "\"id\":3");
    assert_eq!(read_pids(&pids).len(), before + 1, "one warm server for all");
}

#[test]
fn daemon_a_server_held_by_a_slow_hook_is_not_retired() {
    let (dir, pids) = demo_with_pids("daemon_held", &[]);
    let _d = Daemon::start(&dir, &["--idle", "0.3"]);
    let out = warm(
        &dir,
        &["call", "--pre-tool-hook", "sleep 1.5", "demo", "echo", "text=held"],
    )
    .assert_exit(0);
    assert_eq!(out.stdout.trim(), "held");
    assert_eq!(read_pids(&pids).len(), 1);
}

#[test]
fn daemon_start_detaches_and_stop_ends_it() {
    let (dir, pids) = demo_with_pids("daemon_detached", &[]);
    let out = warm(&dir, &["daemon", "start", "--idle", "60"]).assert_exit(0);
    assert_contains(&out.stdout, "daemon started: pid ");
    let again = warm(&dir, &["daemon", "start"]).assert_exit(0);
    assert_contains(&again.stdout, "a daemon already runs");
    let pid = status(&dir)["pid"].as_u64().unwrap();
    assert_eq!(status(&dir)["idle_secs"], 60.0);
    warm(&dir, &["call", "demo", "echo", "text=a"]).assert_exit(0);
    warm(&dir, &["call", "demo", "echo", "text=b"]).assert_exit(0);
    assert_eq!(read_pids(&pids).len(), 1);
    let log = runtime_dir(&dir).join("rivumi-mcp/daemon.log");
    let meta = std::fs::symlink_metadata(&log).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o600);
    assert_contains(
        &std::fs::read_to_string(&log).unwrap(),
        "started server 'demo'",
    );
    warm(&dir, &["daemon", "stop"]).assert_exit(0);
    assert_pids_gone(&pids, Duration::from_secs(5));
    wait_for("the detached daemon exits", || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |s| s.contains(") Z "))
    });
}

#[test]
fn daemon_ctrl_c_cancels_on_the_wire_through_the_daemon() {
    let (dir, rec) = demo_recording("daemon_interrupt");
    let _d = Daemon::start(&dir, &[]);
    warm(&dir, &["call", "demo", "echo", "text=warm"]).assert_exit(0);
    let c = warm(&dir, &["call", "-y", "demo", "slow", "ms:=3000"]);
    let child = c.spawn();
    wait_for("the slow call reaches the server", || {
        recorded(&rec).iter().any(|m| m["params"]["name"] == "slow")
    });
    send_signal(child.id(), "INT");
    let out = crate::util::wait_with_timeout(child, &c);
    assert_eq!(out.code, Some(130), "{}", out.all());
    wait_for_cancel_of_slow(&rec, Some("interrupted"));
    // The server stays warm for the next caller.
    warm(&dir, &["call", "demo", "echo", "text=next"]).assert_exit(0);
    assert_eq!(servers(&dir).len(), 1);
}

/// A Python SDK server over Streamable HTTP (no credentials), in the
/// 2026-07-28 era and, with `--protocol legacy`, in the handshake era:
/// warm as cold, one request at a time on the wire, parallel callers each
/// with their own answer.
#[test]
fn daemon_interop_http_server_warm_as_cold() {
    use crate::util::interop::{Turn, installed, start_py_http};
    let Some(s) = installed("daemon_interop_http", &[]) else { return };
    let turn = Turn::take("interop", "daemon_interop_http");
    let (_server, url) = start_py_http(&s, &turn.dir, "sse", &turn.marker);
    write_mcp_json(&turn.dir, &[("ph", json!({"url": url}))]);
    let dir = &turn.dir;
    let run = |args: &[&str], cold: bool| run_with(dir, "ph", args, cold);
    let cases: [&[&str]; 4] = [
        &["list", "ph", "--json"],
        &["call", "ph", "echo", "message=hi"],
        &["call", "ph", "add", "a=2", "b=3", "--json"],
        &["call", "ph", "echo", "message=old", "--protocol", "legacy"],
    ];
    let colds: Vec<Output> = cases.iter().map(|a| run(a, true)).collect();
    let _d = Daemon::start(dir, &[]);
    for _ in 0..2 {
        for (args, cold) in cases.iter().zip(&colds) {
            let hot = run(args, false);
            assert_eq!(hot.code, Some(0), "{args:?}: {}", hot.all());
            assert_eq!(hot.stdout, cold.stdout, "{args:?}");
        }
    }
    parallel_echoes(dir, "ph", "message", 5, |t| format!("Echo: {t}"));
    let st = servers(dir);
    let mut eras: Vec<&str> =
        st.iter().map(|v| v["era"].as_str().unwrap()).collect();
    eras.sort();
    assert_eq!(eras, ["2025-11-25", "2026-07-28"], "{st:?}");
    assert!(st.iter().all(|v| v["transport"] == "http" && v["pid"].is_null()));
}

// ---- requests tied to no call, concurrent HTTP, tokens, detached tasks --

/// `tests/scripts/idle_asker.py` as a server entry, with `mode`
/// (`--during` or `--after`) and its record file.
fn idle_asker(mode: &str, rec: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scripts/idle_asker.py");
    json!({"command": "/usr/bin/python3",
           "args": [script.to_str().unwrap(), mode, rec.to_str().unwrap()]})
}

/// The answers an idle_asker recorded, one array a line.
fn asker_answers(rec: &Path) -> Vec<Value> {
    recorded(rec)
}

/// What a server asks while no call is in flight is answered by the
/// daemon exactly as a cold invocation with default options and no
/// terminal answers it during a call: ping, roots as declared (refused
/// when none were), sampling refused (not declared), a form and a URL
/// declined, an unknown method refused.
#[test]
fn daemon_requests_tied_to_no_call_are_answered_as_cold() {
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: no /usr/bin/python3");
        return;
    }
    let dir = Dir::new("daemon_unattended");
    let (during, after) = (dir.path("during.jsonl"), dir.path("after.jsonl"));
    write_mcp_json(
        &dir,
        &[
            ("cold", idle_asker("--during", &during)),
            ("idle", idle_asker("--after", &after)),
        ],
    );
    let root = dir.path("a root");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.to_str().unwrap();
    let allow = "cold,idle";
    for extra in [&[][..], &["--root", root][..]] {
        let mut args = vec!["call", "-y", "cold", "kick"];
        args.extend_from_slice(extra);
        let out = run_with(&dir, allow, &args, true);
        assert_eq!(out.code, Some(0), "{}", out.all());
    }
    let cold = asker_answers(&during);
    assert_eq!(cold.len(), 2, "{cold:?}");
    let _d = Daemon::start(&dir, &[]);
    for (n, extra) in [&[][..], &["--root", root][..]].iter().enumerate() {
        let mut args = vec!["call", "-y", "idle", "kick"];
        args.extend_from_slice(extra);
        let out = run_with(&dir, allow, &args, false);
        assert_eq!(out.code, Some(0), "{}", out.all());
        assert_eq!(out.stdout.trim(), "kicked");
        wait_for("the server records the daemon's answers", || {
            asker_answers(&after).len() > n
        });
    }
    let warm = asker_answers(&after);
    assert_eq!(warm, cold, "the daemon answers as cold");
    // What cold answers, for the record.
    let first = &cold[0];
    assert_eq!(first[0]["result"], json!({}));
    assert_eq!(first[1]["error"]["code"], -32601);
    assert_eq!(first[2]["error"]["code"], -32601);
    assert_eq!(first[3]["result"]["action"], "decline");
    assert_eq!(first[4]["result"]["action"], "decline");
    assert_eq!(first[5]["error"]["code"], -32601);
    assert_contains(
        &cold[1][1]["result"]["roots"][0]["uri"].to_string(),
        "a%20root",
    );
    assert_eq!(servers(&dir).len(), 2, "roots are part of the key");
}

/// Concurrent callers on one warm HTTP server run their requests at once
/// (Streamable HTTP allows concurrent POSTs in one session): the server
/// sees a `tools/call` begin while another is still running, all in the
/// one session the daemon opened.
#[test]
fn daemon_http_callers_run_concurrently_in_one_session() {
    use crate::util::http::{HttpFixture, McpScript};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let script = McpScript::new().sessions();
    let (now, most) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (n2, m2) = (Arc::clone(&now), Arc::clone(&most));
    let fx = HttpFixture::start(move |req, conn| {
        if req.rpc_method().as_deref() == Some("tools/call") {
            let here = n2.fetch_add(1, Ordering::SeqCst) + 1;
            m2.fetch_max(here, Ordering::SeqCst);
            thread::sleep(Duration::from_millis(2000));
            n2.fetch_sub(1, Ordering::SeqCst);
        }
        script.handle(req, conn);
    });
    let dir = Dir::new("daemon_http_lanes");
    write_mcp_json(&dir, &[("hx", json!({"url": fx.url()}))]);
    let _d = Daemon::start(&dir, &[]);
    let run = |args: &[&str]| run_with(&dir, "hx", args, false);
    let first = run(&["call", "hx", "echo", "text=first"]);
    assert_eq!(first.code, Some(0), "{}", first.all());
    assert_eq!(most.load(Ordering::SeqCst), 1);
    parallel_echoes(&dir, "hx", "text", 4, str::to_string);
    let overlap = most.load(Ordering::SeqCst);
    assert!(overlap >= 2, "the calls never overlapped ({overlap} at most)");
    assert!(overlap <= 4, "more lanes than the bound: {overlap}");
    assert_eq!(fx.posts_of("initialize").len(), 1, "{}", fx.summary());
    let calls = fx.posts_of("tools/call");
    assert_eq!(calls.len(), 5);
    assert!(
        calls.iter().all(|r| r.header("mcp-session-id") == Some("sess-1")),
        "{}",
        fx.summary()
    );
    let s = servers(&dir);
    assert_eq!(s.len(), 1, "{s:?}");
    assert!(s[0]["lanes"].as_u64().unwrap() >= 2, "{s:?}");
    // The server ends the session: the first lane starts another (as
    // cold does on a 404), and the other lanes follow it there.
    end_session(fx.port(), "sess-1");
    let again = run(&["call", "hx", "echo", "text=again"]);
    assert_eq!(again.code, Some(0), "{}", again.all());
    assert_eq!(again.stdout.trim(), "again");
    most.store(0, Ordering::SeqCst);
    parallel_echoes(&dir, "hx", "text", 4, str::to_string);
    assert!(most.load(Ordering::SeqCst) >= 2, "no overlap in the new session");
    assert_eq!(fx.posts_of("initialize").len(), 2, "{}", fx.summary());
    let calls = fx.posts_of("tools/call");
    assert_eq!(calls.len(), 10);
    assert!(
        calls[5..]
            .iter()
            .all(|r| r.header("mcp-session-id") == Some("sess-2")),
        "{}",
        fx.summary()
    );
    assert_eq!(servers(&dir).len(), 1, "the same warm server");
}

/// A server that answers a call with JSON only when the result is ready
/// (11 s here, past the daemon's 10 s bound for handing a message over)
/// holds the POST that long: the warm call waits for it as the caller
/// does, as cold, and the server stays warm.
#[test]
fn daemon_http_a_slow_json_answer_is_waited_for_as_cold() {
    let script = crate::util::http::McpScript::new().sessions();
    let fx = crate::util::http::HttpFixture::start(move |req, conn| {
        if req.rpc_method().as_deref() == Some("tools/call") {
            thread::sleep(Duration::from_secs(11));
        }
        script.handle(req, conn);
    });
    let dir = Dir::new("daemon_http_slow_json");
    write_mcp_json(&dir, &[("hs", json!({"url": fx.url()}))]);
    let _d = Daemon::start(&dir, &[]);
    let mut c = warm(&dir, &["call", "hs", "echo", "text=late"]);
    c.env("RIVUMI_MCP_ALLOWLIST", "hs");
    c.timeout(Duration::from_secs(60));
    let out = c.run();
    assert_eq!(out.code, Some(0), "{}", out.all());
    assert_eq!(out.stdout.trim(), "late");
    let s = servers(&dir);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0]["alive"], true, "{s:?}");
}

/// An HTTPS server the invocation reaches through its proxy
/// (`HTTPS_PROXY`) is reached through that proxy warm too: the daemon,
/// started without one, uses the invocation's, never its own environment.
#[test]
fn daemon_http_the_invocations_proxy_is_used_warm() {
    let proxy = crate::util::http::HttpFixture::start(|_req, conn| {
        conn.respond(502, &[], b"no upstream here");
    });
    let dir = Dir::new("daemon_http_proxy");
    write_mcp_json(
        &dir,
        &[("hp", json!({"url": "https://mcp.example.test/mcp"}))],
    );
    let _d = Daemon::start(&dir, &[]);
    let via = format!("http://127.0.0.1:{}", proxy.port());
    let run = |cold: bool| {
        let mut all = vec!["list", "hp"];
        if cold {
            all.push("--no-daemon");
        }
        let mut c = warm(&dir, &all);
        c.env("RIVUMI_MCP_ALLOWLIST", "hp");
        c.env("HTTPS_PROXY", &via);
        c.run()
    };
    let cold = run(true);
    let seen = |p: &crate::util::http::HttpFixture| {
        p.requests().iter().filter(|r| r.method == "CONNECT").count()
    };
    let n = seen(&proxy);
    assert!(n >= 1, "cold went through the proxy: {}", proxy.summary());
    let hot = run(false);
    assert!(seen(&proxy) > n, "warm did too: {}", proxy.summary());
    assert_eq!(hot.code, cold.code, "{}\n{}", hot.all(), cold.all());
}

/// An HTTP server that holds a call's POST until its result: a caller
/// killed meanwhile has its request cancelled on the wire while the POST
/// is still held (the notice goes on another lane, not behind it), and
/// `daemon stop` does not wait for the held POST.
#[test]
fn daemon_http_a_held_post_neither_delays_a_cancel_nor_a_stop() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let script = crate::util::http::McpScript::new().sessions();
    let holding = Arc::new(AtomicBool::new(false));
    let cancelled = Arc::new(AtomicBool::new(false));
    // Whether the call was still held when its cancellation came.
    let held_then: Arc<Mutex<Option<bool>>> = Arc::default();
    let (h2, c2, t2) =
        (Arc::clone(&holding), Arc::clone(&cancelled), Arc::clone(&held_then));
    let fx = crate::util::http::HttpFixture::start(move |req, conn| match req
        .rpc_method()
        .as_deref()
    {
        Some("tools/call") => {
            h2.store(true, Ordering::SeqCst);
            let start = Instant::now();
            while !c2.load(Ordering::SeqCst)
                && start.elapsed() < Duration::from_secs(20)
            {
                thread::sleep(Duration::from_millis(10));
            }
            h2.store(false, Ordering::SeqCst);
            script.handle(req, conn);
        }
        Some("notifications/cancelled") => {
            *t2.lock().unwrap() = Some(h2.load(Ordering::SeqCst));
            c2.store(true, Ordering::SeqCst);
            conn.empty(202);
        }
        _ => script.handle(req, conn),
    });
    let dir = Dir::new("daemon_http_held_post");
    write_mcp_json(&dir, &[("hh", json!({"url": fx.url()}))]);
    let mut d = Daemon::start(&dir, &[]);
    let mut c = warm(&dir, &["call", "hh", "echo", "text=long"]);
    c.env("RIVUMI_MCP_ALLOWLIST", "hh");
    let mut child = c.spawn();
    wait_for("the call to be held", || holding.load(Ordering::SeqCst));
    child.kill().unwrap();
    let _ = child.wait();
    wait_for("the cancellation", || held_then.lock().unwrap().is_some());
    assert_eq!(
        *held_then.lock().unwrap(),
        Some(true),
        "cancelled while the POST was held: {}",
        fx.summary()
    );
    // Held again, by another caller: a stop does not wait for it.
    cancelled.store(false, Ordering::SeqCst);
    let mut c = warm(&dir, &["call", "hh", "echo", "text=again"]);
    c.env("RIVUMI_MCP_ALLOWLIST", "hh");
    let mut child = c.spawn();
    wait_for("the call to be held", || holding.load(Ordering::SeqCst));
    let mut stop = warm(&dir, &["daemon", "stop"]);
    stop.timeout(Duration::from_secs(15));
    stop.assert_exit(0);
    assert!(d.wait().success());
    let _ = child.kill();
    let _ = child.wait();
    cancelled.store(true, Ordering::SeqCst);
}

/// A server that refuses the cancellation a killed caller's request gets
/// (HTTP 400) does not lose its warm session: a notification is best
/// effort, as cold sends one, even when it goes out on the first lane.
#[test]
fn daemon_http_a_refused_cancellation_keeps_the_server() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let script = crate::util::http::McpScript::new().sessions();
    let held = Arc::new(AtomicUsize::new(0));
    let cancelled = Arc::new(AtomicBool::new(false));
    let (h2, c2) = (Arc::clone(&held), Arc::clone(&cancelled));
    let fx = crate::util::http::HttpFixture::start(move |req, conn| match req
        .rpc_method()
        .as_deref()
    {
        Some("tools/call") => {
            let text = req.json()["params"]["arguments"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let hold = match text.as_str() {
                "first" => Duration::from_millis(1500),
                "second" => Duration::from_secs(30),
                _ => Duration::ZERO,
            };
            h2.fetch_add(1, Ordering::SeqCst);
            let start = Instant::now();
            while start.elapsed() < hold && !c2.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(10));
            }
            h2.fetch_sub(1, Ordering::SeqCst);
            script.handle(req, conn);
        }
        Some("notifications/cancelled") => {
            c2.store(true, Ordering::SeqCst);
            conn.respond(400, &[], b"cancellation not taken");
        }
        _ => script.handle(req, conn),
    });
    let dir = Dir::new("daemon_http_refused_cancel");
    write_mcp_json(&dir, &[("hc", json!({"url": fx.url()}))]);
    let _d = Daemon::start(&dir, &[]);
    let call = |text: &str| {
        let arg = format!("text={text}");
        let mut c = warm(&dir, &["call", "hc", "echo", &arg]);
        c.env("RIVUMI_MCP_ALLOWLIST", "hc");
        c
    };
    // The first call holds the first lane, the second the next one.
    let (first_cmd, second_cmd) = (call("first"), call("second"));
    let first = first_cmd.spawn();
    wait_for("the first call", || held.load(Ordering::SeqCst) == 1);
    let mut second = second_cmd.spawn();
    wait_for("the second call", || held.load(Ordering::SeqCst) == 2);
    let out = crate::util::wait_with_timeout(first, &first_cmd);
    assert_eq!(out.code, Some(0), "{}", out.all());
    // The first lane is idle now: the cancellation goes out on it.
    second.kill().unwrap();
    let _ = second.wait();
    wait_for("the cancellation", || cancelled.load(Ordering::SeqCst));
    let out = call("third").run();
    assert_eq!(out.code, Some(0), "{}", out.all());
    assert_eq!(out.stdout.trim(), "third");
    assert_eq!(fx.posts_of("initialize").len(), 1, "{}", fx.summary());
    assert_eq!(servers(&dir).len(), 1);
}

/// A token the server stops accepting while its warm session lives fails
/// the next call as cold fails it (an authentication error, exit 6, the
/// same hint), not as a server failure (exit 4).
#[test]
fn daemon_a_token_refused_mid_session_fails_as_cold() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let script = crate::util::http::McpScript::new().sessions();
    let revoked = Arc::new(AtomicBool::new(false));
    let r2 = Arc::clone(&revoked);
    let fx = crate::util::http::HttpFixture::start(move |req, conn| {
        if r2.load(Ordering::SeqCst) {
            conn.respond(
                401,
                &[("www-authenticate", "Bearer error=\"invalid_token\"")],
                b"no",
            );
        } else {
            script.handle(req, conn);
        }
    });
    let dir = Dir::new("daemon_http_revoked");
    write_mcp_json(
        &dir,
        &[(
            "hr",
            json!({"url": fx.url(), "bearer_token_env_var": "HR_TOKEN"}),
        )],
    );
    let _d = Daemon::start(&dir, &[]);
    let run = |cold: bool| {
        let mut all = vec!["call", "hr", "echo", "text=hi"];
        if cold {
            all.push("--no-daemon");
        }
        let mut c = warm(&dir, &all);
        c.env("RIVUMI_MCP_ALLOWLIST", "hr");
        c.env("HR_TOKEN", "tok-revoked-soon");
        c.run()
    };
    let first = run(false);
    assert_eq!(first.code, Some(0), "{}", first.all());
    assert_eq!(servers(&dir).len(), 1);
    revoked.store(true, Ordering::SeqCst);
    let hot = run(false);
    let cold = run(true);
    assert_eq!(cold.code, Some(6), "{}", cold.all());
    assert_eq!(hot.code, Some(6), "{}", hot.all());
    for out in [&hot, &cold] {
        assert_contains(&out.stderr, "the token in 'HR_TOKEN' was refused");
    }
}

/// A token command that prints a new token every run (a minted token)
/// never fills the daemon: the family keeps at most 4 servers (the
/// unused longest retiring), and 70 runs (more than the daemon's 64
/// servers) all succeed warm.
#[test]
fn daemon_a_token_new_every_run_never_fills_the_daemon() {
    let fx = crate::util::http::HttpFixture::mcp(
        crate::util::http::McpScript::new().sessions(),
    );
    let dir = Dir::new("daemon_http_minted");
    write_mcp_json(
        &dir,
        &[(
            "hm",
            json!({"url": fx.url(),
                        "token_command": ["sh", "-c", "echo minted-$$"]}),
        )],
    );
    let _d = Daemon::start(&dir, &[]);
    for i in 0..70 {
        let out =
            run_with(&dir, "hm", &["call", "hm", "echo", "text=x"], false);
        assert_eq!(out.code, Some(0), "run {i}: {}", out.all());
        assert_eq!(out.stderr, "", "run {i} ran warm and quiet");
    }
    let s = servers(&dir);
    assert_eq!(s.len(), 4, "{s:?}");
    assert_eq!(fx.posts_of("initialize").len(), 70);
    let tokens: std::collections::HashSet<String> = fx
        .posts_of("initialize")
        .iter()
        .filter_map(|r| r.header("authorization").map(str::to_string))
        .collect();
    assert_eq!(tokens.len(), 70, "a new token each run");
}

/// Concurrent callers of one warm HTTP server whose calls each ask a
/// question on their own request's stream: each question reaches the
/// caller whose call it came with and is answered by that invocation's
/// `--answer`, though four calls are in flight at once (over stdio,
/// whose wire does not say which call a request belongs to, the daemon
/// refuses rather than guess).
#[test]
fn daemon_http_questions_reach_the_caller_whose_call_asked() {
    use crate::util::http::{HttpFixture, McpScript};
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    const N: usize = 4;
    let script = McpScript::new().sessions();
    let answers: Arc<Mutex<HashMap<String, Value>>> = Arc::default();
    let calling = Arc::new(AtomicUsize::new(0));
    let (a2, c2) = (Arc::clone(&answers), Arc::clone(&calling));
    let fx = HttpFixture::start(move |req, conn| {
        if req.is_rpc_response() {
            let v = req.json();
            let id = v["id"].as_str().unwrap_or_default().to_string();
            a2.lock().unwrap().insert(id, v["result"].clone());
            conn.empty(202);
            return;
        }
        if req.rpc_method().as_deref() != Some("tools/call") {
            return script.handle(req, conn);
        }
        let v = req.json();
        let text =
            v["params"]["arguments"]["text"].as_str().unwrap().to_owned();
        // Every call in flight before any asks: the question is
        // ambiguous unless its stream says whose it is.
        c2.fetch_add(1, Ordering::SeqCst);
        let start = Instant::now();
        while c2.load(Ordering::SeqCst) < N
            && start.elapsed() < Duration::from_secs(10)
        {
            thread::sleep(Duration::from_millis(10));
        }
        let ask = format!("ask-{text}");
        conn.sse(&[]);
        conn.event(
            None,
            &json!({"jsonrpc": "2.0", "id": ask,
            "method": "elicitation/create", "params": {
                "message": format!("Who is {text}?"),
                "requestedSchema": {"type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]}}}),
        );
        let start = Instant::now();
        let answer = loop {
            if let Some(a) = a2.lock().unwrap().remove(&ask) {
                break a;
            }
            if start.elapsed() > Duration::from_secs(20) {
                break json!("no answer");
            }
            thread::sleep(Duration::from_millis(10));
        };
        let said = format!("{text}:{}", answer["content"]["name"]);
        conn.event(
            None,
            &json!({"jsonrpc": "2.0", "id": v["id"], "result":
            {"content": [{"type": "text", "text": said}]}}),
        );
    });
    let dir = Dir::new("daemon_http_asks");
    write_mcp_json(&dir, &[("hx", json!({"url": fx.url()}))]);
    let _d = Daemon::start(&dir, &[]);
    let children: Vec<(usize, Child, TestCommand)> = (0..N)
        .map(|i| {
            let (text, name) = (format!("text=c{i}"), format!("name=n{i}"));
            let mut c =
                warm(&dir, &["call", "hx", "echo", &text, "--answer", &name]);
            c.env("RIVUMI_MCP_ALLOWLIST", "hx");
            (i, c.spawn(), c)
        })
        .collect();
    for (i, child, c) in children {
        let out = crate::util::wait_with_timeout(child, &c);
        assert_eq!(
            out.code,
            Some(0),
            "{}\n{}\n{}",
            out.all(),
            fx.summary(),
            _d.log_text()
        );
        assert_eq!(
            out.stdout.trim(),
            format!("c{i}:\"n{i}\""),
            "{}",
            out.all()
        );
    }
    assert_eq!(fx.posts_of("initialize").len(), 1, "{}", fx.summary());
    assert_eq!(servers(&dir).len(), 1);
}

/// DELETEs the session `id` of the fixture at `port` (the server ending
/// it), as a raw HTTP/1.1 request.
fn end_session(port: u16, id: &str) {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: {id}\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// An MCP server over HTTP (with sessions) that answers only a request
/// bearing one of `tokens` (and `X-Api-Key: key` when given), and 401
/// anything else.
fn guarded_server(
    tokens: &'static [&'static str],
    key: Option<&'static str>,
) -> crate::util::http::HttpFixture {
    let script = crate::util::http::McpScript::new().sessions();
    crate::util::http::HttpFixture::start(move |req, conn| {
        let token = tokens.iter().any(|t| {
            req.header("authorization") == Some(&format!("Bearer {t}"))
        });
        if token && key.is_none_or(|k| req.header("x-api-key") == Some(k)) {
            script.handle(req, conn);
        } else {
            conn.respond(
                401,
                &[("www-authenticate", "Bearer realm=\"x\"")],
                b"no",
            );
        }
    })
}

/// An HTTP server with a bearer token from a variable is kept warm,
/// keyed by the token's hash: a changed token is another server; a
/// refused token fails as cold; the daemon writes the token nowhere.
#[test]
fn daemon_http_bearer_from_env_is_warm_and_never_written() {
    const GOOD: [&str; 2] = ["tok-AAAA-0123456789", "tok-BBBB-9876543210"];
    let fx = guarded_server(&GOOD, None);
    let dir = Dir::new("daemon_http_bearer");
    write_mcp_json(
        &dir,
        &[(
            "hb",
            json!({"url": fx.url(), "bearer_token_env_var": "HB_TOKEN"}),
        )],
    );
    let d = Daemon::start(&dir, &[]);
    let run = |token: &str, cold: bool| {
        let mut all = vec!["call", "hb", "echo", "text=hi"];
        if cold {
            all.push("--no-daemon");
        }
        let mut c = warm(&dir, &all);
        c.env("RIVUMI_MCP_ALLOWLIST", "hb");
        c.env("HB_TOKEN", token);
        c.run()
    };
    for _ in 0..2 {
        let out = run(GOOD[0], false);
        assert_eq!(out.code, Some(0), "{}", out.all());
        assert_eq!(out.stdout.trim(), "hi");
    }
    assert_eq!(fx.posts_of("initialize").len(), 1, "one warm session");
    assert_eq!(servers(&dir).len(), 1);
    let other = run(GOOD[1], false);
    assert_eq!(other.code, Some(0), "{}", other.all());
    // Another token is another server (the old one is kept: a family
    // keeps a few).
    let s = servers(&dir);
    assert_eq!(s.len(), 2, "{s:?}");
    assert_ne!(s[0]["fingerprint"], s[1]["fingerprint"]);
    assert_eq!(fx.posts_of("initialize").len(), 2, "{}", fx.summary());
    let (cold, hot) = (run("tok-wrong", true), run("tok-wrong", false));
    assert_eq!(hot.code, cold.code, "{}\n{}", hot.all(), cold.all());
    assert_eq!(hot.code, Some(6));
    assert_contains(&hot.stderr, "the token in 'HB_TOKEN' was refused");
    assert_eq!(servers(&dir).len(), 2, "a refused token keeps nothing");
    let status = warm(&dir, &["daemon", "status", "--json"]).assert_exit(0);
    let human = warm(&dir, &["daemon", "status"]).assert_exit(0);
    for t in GOOD.iter().chain(&["tok-wrong"]) {
        for (what, text) in [
            ("status", &status.stdout),
            ("human status", &human.stdout),
            ("log", &d.log_text()),
        ] {
            assert!(!text.contains(t), "the token is in the {what}: {text}");
        }
    }
}

/// An HTTP server whose token comes from `token_command` and a header from
/// `headers_command` is kept warm: each invocation runs the commands, as
/// cold does, and their output is in the key (another output, another
/// server); a refused token fails exactly as cold;
/// the daemon writes
/// neither value anywhere.
#[test]
fn daemon_http_credential_commands_are_warm_keyed_by_their_output() {
    const TOKENS: [&str; 2] = ["cmd-tok-AAAA-0123", "cmd-tok-BBBB-4567"];
    const KEY: &str = "api-key-CCCC-8901";
    let fx = guarded_server(&TOKENS, Some(KEY));
    let dir = Dir::new("daemon_http_commands");
    let token = dir.write("token.txt", TOKENS[0]);
    dir.write("key.txt", KEY);
    let runs = dir.path("runs.log");
    write_mcp_json(
        &dir,
        &[(
            "hc",
            json!({
                "url": fx.url(),
                "token_command": ["sh", "-c",
                    format!("echo run >> '{}'; cat '{}'", runs.display(),
                            token.display())],
                "headers_command":
                    {"X-Api-Key": ["cat", dir.path("key.txt")]},
            }),
        )],
    );
    let d = Daemon::start(&dir, &[]);
    let run = |cold: bool| {
        run_with(&dir, "hc", &["call", "hc", "echo", "text=hi"], cold)
    };
    for _ in 0..2 {
        let out = run(false);
        assert_eq!(out.code, Some(0), "{}", out.all());
        assert_eq!(out.stdout.trim(), "hi");
    }
    assert_eq!(fx.posts_of("initialize").len(), 1, "one warm session");
    let count = || std::fs::read_to_string(&runs).unwrap().lines().count();
    assert_eq!(count(), 2, "the command runs in every invocation");
    assert_eq!(servers(&dir).len(), 1);
    std::fs::write(&token, TOKENS[1]).unwrap();
    let other = run(false);
    assert_eq!(other.code, Some(0), "{}", other.all());
    // Another output is another server (the old one is kept: a family
    // keeps a few).
    let s = servers(&dir);
    assert_eq!(s.len(), 2, "{s:?}");
    assert_ne!(s[0]["fingerprint"], s[1]["fingerprint"]);
    assert_eq!(fx.posts_of("initialize").len(), 2, "{}", fx.summary());
    std::fs::write(&token, "cmd-tok-wrong").unwrap();
    let (cold, hot) = (run(true), run(false));
    same_output(&cold, &hot);
    assert_eq!(hot.code, Some(6));
    assert_contains(&hot.stderr, "token_command 'sh' printed was refused");
    assert_eq!(servers(&dir).len(), 2, "a refused token keeps nothing");
    let status = warm(&dir, &["daemon", "status", "--json"]).assert_exit(0);
    for t in TOKENS.iter().chain(&[KEY, "cmd-tok-wrong"]) {
        for (what, text) in
            [("status", &status.stdout), ("log", &d.log_text())]
        {
            assert!(!text.contains(t), "a secret is in the {what}: {text}");
        }
    }
}

/// `call --detach` on a stdio server kept warm by the daemon: the task
/// lives in the warm server, which the daemon does not retire while the
/// task may be collected (even with `--idle 1`); `task get` and `task
/// result` from later invocations reach it; once it is collected the
/// server retires; a task whose server is gone fails clearly; without a
/// daemon `--detach` is refused with the reason.
#[test]
fn daemon_interop_detached_task_lives_in_the_warm_server() {
    use crate::util::interop::{Turn, assert_no_leftovers, installed};
    let test = "daemon_interop_detached_task";
    let Some(s) = installed(test, &[]) else { return };
    let turn = Turn::take("interop", test);
    let marker = turn.marker.clone();
    write_mcp_json(
        &turn.dir,
        &[(
            "ev",
            json!({"command": s.node,
                   "args": [s.everything_js, "stdio", &marker]}),
        )],
    );
    let dir = &turn.dir;
    let run = |args: &[&str]| run_with(dir, "ev", args, false);
    let detach = [
        "call",
        "ev",
        "simulate-research-query",
        "topic=python",
        "ambiguous:=true",
        "-y",
        "--detach",
        "--journal",
        "j.jsonl",
    ];
    // No daemon: refused, with the reason, before anything starts.
    let out = run(&detach);
    assert_eq!(out.code, Some(2), "{}", out.all());
    assert_contains(&out.stderr, "--detach needs a server that outlives");
    assert_contains(&out.stderr, "no daemon runs");
    assert_eq!(out.stdout, "");
    let mut d = Daemon::start(dir, &["--idle", "1"]);
    let detached = || {
        let out = run(&detach);
        assert_eq!(out.code, Some(0), "{}", out.all());
        let line = out.stdout.trim().to_string();
        let id = line.strip_prefix("ev ").expect(&line).to_string();
        assert!(!id.is_empty() && !id.contains(' '), "{line}");
        id
    };
    let id = detached();
    // Longer than --idle: the server holds a task, so it stays.
    thread::sleep(Duration::from_millis(2500));
    let st = servers(dir);
    assert_eq!(st.len(), 1, "{st:?}");
    assert_eq!(st[0]["tasks"], 1, "{st:?}");
    let out = run(&["task", "get", "ev", &id, "--json"]);
    assert_eq!(out.code, Some(0), "{}", out.all());
    let v = out.stdout_json();
    assert_eq!(v["taskId"], json!(id));
    assert!(
        ["working", "input_required"].contains(&v["status"].as_str().unwrap()),
        "{v}"
    );
    let out = run(&[
        "task",
        "result",
        "ev",
        &id,
        "--answer",
        "interpretation=comedy",
        "--journal",
        "j.jsonl",
    ]);
    assert_eq!(out.code, Some(0), "{}", out.all());
    assert_contains(&out.stdout, "# Research Report: python (comedy)");
    let journal = std::fs::read_to_string(dir.path("j.jsonl")).unwrap();
    assert_contains(&journal, "\"warm\":true");
    assert!(!journal.contains(&id), "the task id is journaled: {journal}");
    // Collected: nothing holds the server any more; it retires.
    wait_for("the server retires once its task is collected", || {
        servers(dir).is_empty()
    });
    let out = run(&["task", "get", "ev", &id]);
    assert_eq!(out.code, Some(4), "{}", out.all());
    assert_contains(&out.stderr, "no warm server holds this task");
    // A task whose server the daemon ended is gone, said clearly.
    let id = detached();
    warm(dir, &["daemon", "stop"]).assert_exit(0);
    assert!(d.wait().success());
    let out = run(&["task", "get", "ev", &id]);
    assert_eq!(out.code, Some(4), "{}", out.all());
    assert_contains(&out.stderr, "server 'ev'");
    assert_contains(&out.stderr, "no daemon runs");
    let d = Daemon::start(dir, &[]);
    let out = run(&["task", "result", "ev", &id]);
    assert_eq!(out.code, Some(4), "{}", out.all());
    assert_contains(&out.stderr, "no warm server holds this task");
    assert!(servers(dir).is_empty(), "no server was started for it");
    // A warm server that crashed took its task with it.
    let id = detached();
    let pid = servers(dir)[0]["pid"].as_u64().unwrap();
    send_signal(pid as u32, "KILL");
    // (A `task` racing the crash fails with "server exited" instead.)
    wait_for("the daemon notices the crash", || servers(dir).is_empty());
    let out = run(&["task", "get", "ev", &id]);
    assert_eq!(out.code, Some(4), "{}", out.all());
    assert_contains(&out.stderr, "no warm server holds this task");
    assert!(!d.log_text().contains(&id), "the daemon logged the task id");
    warm(dir, &["daemon", "stop"]).assert_exit(0);
    assert_no_leftovers(&marker, "daemon stop", "rivumi-mcp daemon stop");
}

/// `call --detach` on a stdio server needs the daemon to keep it warm:
/// refused with the reason (exit 2) when no daemon runs or it is off for
/// the invocation, before anything starts; `task` on a stdio server
/// reaches only a warm server that holds the task, never a new one.
#[test]
fn daemon_detach_and_task_on_stdio_need_the_warm_server() {
    let (dir, pids) = demo_with_pids("daemon_detach_refused", &[]);
    let detach = ["call", "-y", "demo", "echo", "text=a", "--detach"];
    let out = warm(&dir, &detach).assert_exit(2);
    assert_contains(
        &out.stderr,
        "'demo' is a stdio server and no daemon runs",
    );
    assert_eq!(out.stdout, "");
    let out = warm(&dir, &["task", "get", "demo", "t-1"]).assert_exit(4);
    assert_contains(&out.stderr, "server 'demo'");
    assert_contains(&out.stderr, "no daemon runs");
    let _d = Daemon::start(&dir, &[]);
    let mut off = detach.to_vec();
    off.push("--no-daemon");
    let out = warm(&dir, &off).assert_exit(2);
    assert_contains(&out.stderr, "the daemon is off for this invocation");
    let out = warm(&dir, &["task", "result", "demo", "t-1"]).assert_exit(4);
    assert_contains(&out.stderr, "no warm server holds this task");
    assert!(read_pids(&pids).is_empty(), "a server was started");
    assert!(servers(&dir).is_empty());
}
