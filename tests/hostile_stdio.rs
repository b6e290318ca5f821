//! Hostile stdio servers: a flood that must not push rivumi-mcp's memory
//! past the documented ceiling, a server whose leftover grandchild keeps
//! stdout open after it exits, and signals at random early moments that
//! must never leave a server process behind.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{
    ALLOWLIST, Dir, assert_contains, assert_pids_gone, fixture_server,
    read_pids, run_allowed, wait_with_timeout, write_mcp_json,
};

/// How long processes may linger after the command returned.
const GONE: Duration = Duration::from_secs(1);

/// The documented ceiling (GUIDE.md, "Timeouts and limits"): rivumi-mcp stays under this
/// many bytes of resident memory plus six times `--max-message` for each
/// running stdio server, whatever the server sends.
const CEILING_BASE: u64 = 64 << 20;
const CEILING_PER_MESSAGE: u64 = 6;

/// A `kB` field of `/proc/PID/status`, in bytes.
fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix(field))?;
    let kb: u64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// Samples the peak resident size (`VmHWM`) of `pid` every 10 ms until
/// `stop` is set or the process is gone; returns the highest seen.
fn watch_peak_rss(pid: u32, stop: Arc<AtomicBool>) -> thread::JoinHandle<u64> {
    thread::spawn(move || {
        let mut peak = 0;
        while !stop.load(Ordering::Relaxed) {
            match status_kb(pid, "VmHWM:") {
                Some(b) => peak = peak.max(b),
                None => break,
            }
            thread::sleep(Duration::from_millis(10));
        }
        peak
    })
}

/// Two `batch` calls of `tool` on `server`, 2.5 s apart (the server may
/// flood in between, while nothing reads), with `--max-message 1M`;
/// asserts that rivumi-mcp's peak RSS stays under the documented ceiling
/// and returns both reply lines, how long the second took and the run.
fn two_calls_across_a_flood(
    dir: &Dir,
    server: &str,
    timeout: &str,
) -> (Value, Value, Duration, crate::util::Output, crate::util::TestCommand) {
    let mut cmd = dir.command(["batch", "--max-message", "1M"]);
    cmd.args(["--timeout", timeout]).env(ALLOWLIST, server);
    let mut child = cmd.spawn();
    let stop = Arc::new(AtomicBool::new(false));
    let peak = watch_peak_rss(child.id(), Arc::clone(&stop));
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let call = |id: u32| {
        json!({"id": id, "tool": format!("mcp__{server}__echo"),
               "arguments": {"text": format!("call {id}")}})
        .to_string()
            + "\n"
    };
    stdin.write_all(call(1).as_bytes()).unwrap();
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    thread::sleep(Duration::from_millis(2500));
    let started = Instant::now();
    stdin.write_all(call(2).as_bytes()).unwrap();
    drop(stdin);
    let mut second = String::new();
    stdout.read_line(&mut second).unwrap();
    let took = started.elapsed();
    drop(stdout);
    let out = wait_with_timeout(child, &cmd);
    stop.store(true, Ordering::Relaxed);
    assert_under_ceiling(peak.join().unwrap(), 1 << 20, &cmd.report(&out));
    let first: Value = serde_json::from_str(&first).unwrap();
    let second: Value = serde_json::from_str(&second).unwrap();
    (first, second, took, out, cmd)
}

#[test]
fn flooding_server_cannot_push_memory_past_the_ceiling() {
    // The server answers the first call, then writes 384 MiB of pings with
    // 256 KiB ids and big notifications without ever reading its stdin.
    // Meanwhile `batch` waits 2.5 s for its next input line: nothing reads
    // the flood, and before the queues were bounded it piled up in memory.
    // The second call then has to answer the pings, which the server never
    // reads: that must fail with a clear error at the deadline, not grow.
    let dir = Dir::new("hostile_flood");
    let pids = dir.path("pids");
    let pid_arg = format!("--pid-file={}", pids.display());
    let flood = format!("--flood={}", 384u64 << 20);
    write_mcp_json(&dir, &[("demo", fixture_server(&[&flood, &pid_arg]))]);
    let (first, second, took, out, cmd) =
        two_calls_across_a_flood(&dir, "demo", "3");
    assert_eq!(first["ok"], true, "{first}");
    assert_eq!(second["ok"], false, "{second}");
    assert_contains(
        second["error"]["message"].as_str().unwrap_or_default(),
        "server is not reading its stdin:",
    );
    assert!(took < Duration::from_secs(10), "the second call took {took:?}");
    assert_ne!(out.code, Some(0), "{}", cmd.report(&out));
    assert_pids_gone(&pids, GONE);
}

#[test]
fn exited_server_is_noticed_though_its_grandchild_holds_stdout() {
    // The server exits at the call; its grandchild (asleep for 300 s)
    // keeps the stdout pipe open, so no EOF comes. The exit must be
    // reported at once, not at the 30 s request deadline, and the
    // grandchild must not outlive the command.
    let dir = Dir::new("hostile_exit_grandchild");
    let pids = dir.path("pids");
    let pid_arg = format!("--pid-file={}", pids.display());
    let server = fixture_server(&["--grandchild", "--exit-at-call", &pid_arg]);
    write_mcp_json(&dir, &[("demo", server)]);
    let start = Instant::now();
    let out = run_allowed(
        &dir,
        "demo",
        &["call", "-y", "demo", "echo", "text=hi", "--timeout", "30"],
    )
    .assert_exit(4);
    let took = start.elapsed();
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': server exited (exit status: 4); last \
         lines of its stderr:\n    exiting at tools/call\n"
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_eq!(read_pids(&pids).len(), 2, "server and grandchild");
    assert_pids_gone(&pids, GONE);
}

/// A helper that moved to a process group of its own (`setpgid`) holds
/// none of the server's pipes and is not in its group, but it is still in
/// the server's session: it ends with the server, after a normal close and
/// after the server died at a call (issue 22, item 15).
#[test]
fn a_helper_that_left_the_group_ends_with_the_session() {
    for (test, args, code) in [
        ("hostile_session_list", &["list", "demo"][..], 0),
        (
            "hostile_session_exit",
            &["call", "-y", "demo", "echo", "text=hi"],
            4,
        ),
    ] {
        let dir = Dir::new(test);
        let pids = dir.path("pids");
        let pid_arg = format!("--pid-file={}", pids.display());
        let mut flags = vec!["--grandchild-own-group", pid_arg.as_str()];
        if code == 4 {
            flags.push("--exit-at-call");
        }
        write_mcp_json(&dir, &[("demo", fixture_server(&flags))]);
        run_allowed(&dir, "demo", args).assert_exit(code);
        assert_eq!(read_pids(&pids).len(), 2, "server and helper");
        assert_pids_gone(&pids, GONE);
    }
}

/// The pids of live processes (zombies aside) that run in `dir` or below
/// (rivumi-mcp runs there; its servers and their children inherit it).
fn processes_in(dir: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return vec![] };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd"));
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default();
            let zombie = stat
                .rfind(')')
                .is_some_and(|i| stat[i + 1..].trim_start().starts_with('Z'));
            !zombie && cwd.is_ok_and(|c| c.starts_with(dir))
        })
        .collect()
}

/// A small deterministic generator (xorshift), seeded from the clock; the
/// seed is printed so that a failing run can be repeated.
fn next_random(state: &AtomicU64) -> u64 {
    let mut x = state.load(Ordering::Relaxed);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    state.store(x, Ordering::Relaxed);
    x
}

#[test]
fn early_signals_never_leave_a_server_behind() {
    // 200 runs of `list` (the fixture also has a grandchild), each sent
    // SIGTERM or SIGINT 0-50 ms after it started: at start-up, during the
    // spawn, the handshake, the listing or after. Every run must end with
    // 130/143 (or 0 if it finished first; a signal before the handler is
    // installed ends the process by the signal itself, which a shell
    // reports as 130/143 too), and no process started for it may remain.
    const RUNS: usize = 200;
    const PARALLEL: usize = 8;
    let dir = Dir::new("hostile_early_signals");
    let pid_arg = format!("--pid-file={}", dir.path("pids").display());
    write_mcp_json(
        &dir,
        &[("demo", fixture_server(&["--grandchild", &pid_arg]))],
    );
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    eprintln!("seed {seed:#x}");
    let random = AtomicU64::new(seed);
    let base = run_allowed(&dir, "demo", &["list"]);
    let outcomes = Mutex::new(vec![]);
    let start = Instant::now();
    for round in 0..RUNS.div_ceil(PARALLEL) {
        thread::scope(|s| {
            for i in 0..PARALLEL {
                let n = round * PARALLEL + i;
                if n >= RUNS {
                    break;
                }
                // Spread evenly over 0-50 ms, jittered.
                let delay_us = (n as u64 * 50_000 / RUNS as u64
                    + next_random(&random) % 1000)
                    .min(50_000);
                let sigterm = next_random(&random) & 1 == 0;
                let (base, outcomes) = (&base, &outcomes);
                s.spawn(move || {
                    let mut c = base.std_command();
                    c.stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::piped());
                    let mut child = c.spawn().unwrap();
                    thread::sleep(Duration::from_micros(delay_us));
                    let sig = if sigterm { "-TERM" } else { "-INT" };
                    let _ = Command::new("kill")
                        .args([sig, &child.id().to_string()])
                        .status();
                    let status = child.wait().unwrap();
                    outcomes.lock().unwrap().push((n, delay_us, sig, status));
                });
            }
        });
    }
    let took = start.elapsed();
    eprintln!("{RUNS} runs in {took:?}");
    let outcomes = outcomes.into_inner().unwrap();
    let mut codes = std::collections::BTreeMap::new();
    for (_, _, _, status) in &outcomes {
        *codes.entry(format!("{status}")).or_insert(0) += 1;
    }
    // Two pids (server and grandchild) per server started.
    let servers = read_pids(&dir.path("pids")).len() / 2;
    eprintln!("{servers} servers started; outcomes {codes:?}");
    assert!(servers >= 20, "too few runs got as far as a server: {servers}");
    for (n, delay_us, sig, status) in outcomes {
        use std::os::unix::process::ExitStatusExt;
        let ok = match (status.code(), status.signal()) {
            (Some(0), _) => true,
            (Some(130), _) => sig == "-INT",
            (Some(143), _) => sig == "-TERM",
            (None, Some(2)) => sig == "-INT",
            (None, Some(15)) => sig == "-TERM",
            _ => false,
        };
        assert!(ok, "run {n} ({sig} after {delay_us} us): {status:?}");
    }
    assert_left_nothing(dir.root(), &dir.path("pids"));
}

/// Waits up to 2 s for every process started in the test directory `dir`
/// (found by its working directory, and by the pid file) to be gone.
#[track_caller]
fn assert_left_nothing(dir: &Path, pid_file: &Path) {
    let start = Instant::now();
    loop {
        let left = processes_in(dir);
        if left.is_empty() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "processes left behind: {left:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
    if !read_pids(pid_file).is_empty() {
        assert_pids_gone(pid_file, GONE);
    }
}

/// The same over Streamable HTTP: after answering the first call on its
/// event stream, a 2025 server keeps that stream open and floods it with
/// 400 MiB of notifications while `batch` waits for its next line. The
/// thread that reads the stream may not buffer them without limit: past
/// its budget the stream is dropped, and the next call still works.
#[test]
fn a_flooding_http_stream_cannot_push_memory_past_the_ceiling() {
    use crate::util::http::{HttpFixture, McpScript};
    let script = McpScript::new();
    let flooded = AtomicBool::new(false);
    let fx = HttpFixture::start(move |req, conn| {
        let msg = req.json();
        let call = req.method == "POST" && msg["method"] == "tools/call";
        if call && !flooded.swap(true, Ordering::SeqCst) {
            // The first call: answered, then the flood on the same stream.
            conn.sse(&[]);
            let answer = json!({"jsonrpc": "2.0", "id": msg["id"],
                "result": {"content": [{"type": "text", "text": "call 1"}]}});
            if !conn.event(None, &answer) {
                return;
            }
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "x".repeat(512 << 10)}});
            for _ in 0..800 {
                if !conn.alive() || !conn.event(None, &note) {
                    return;
                }
            }
            return;
        }
        script.handle(req, conn);
    });
    let dir = Dir::new("hostile_http_flood");
    write_mcp_json(
        &dir,
        &[("web", json!({"url": fx.url(), "protocol": "legacy"}))],
    );
    let (first, second, _, _, _) = two_calls_across_a_flood(&dir, "web", "10");
    assert_eq!(first["ok"], true, "{first}");
    assert_eq!(second["ok"], true, "{second}");
    assert_eq!(second["result"]["content"][0]["text"], "call 2");
}

/// Runs `cmd` (spawned with stdin closed) to its end and returns its
/// output and its peak RSS, asserting the documented ceiling for one
/// running server with `--max-message` of `max_message` bytes.
pub(crate) fn within_the_ceiling(
    cmd: &crate::util::TestCommand,
    max_message: u64,
) -> crate::util::Output {
    let mut child = cmd.spawn();
    drop(child.stdin.take());
    let stop = Arc::new(AtomicBool::new(false));
    let peak = watch_peak_rss(child.id(), Arc::clone(&stop));
    let out = wait_with_timeout(child, cmd);
    stop.store(true, Ordering::Relaxed);
    assert_under_ceiling(peak.join().unwrap(), max_message, &cmd.report(&out));
    out
}

/// Asserts a peak RSS under the documented ceiling for `per_message`
/// bytes of `--max-message` (summed over the servers running at once).
#[track_caller]
fn assert_under_ceiling(peak: u64, per_message: u64, report: &str) {
    let ceiling = CEILING_BASE + CEILING_PER_MESSAGE * per_message;
    eprintln!("peak RSS {} KiB (ceiling {} KiB)", peak >> 10, ceiling >> 10);
    assert!(peak > 0, "no VmHWM sample");
    assert!(
        peak < ceiling,
        "peak RSS {} MiB is past the ceiling {} MiB: {report}",
        peak >> 20,
        ceiling >> 20,
    );
}

#[test]
fn a_message_of_many_tiny_values_cannot_push_memory_past_the_ceiling() {
    // 500,000 empty text blocks: 13.5 MB on the wire, within the default
    // --max-message (16 MiB), but some 400 MB once parsed as it stood.
    // Refused before it is built, through call, read and prompt alike.
    let dir = Dir::new("hostile_tiny_blocks");
    write_mcp_json(
        &dir,
        &[("demo", fixture_server(&["--tiny-blocks", "500000"]))],
    );
    for args in [
        &["call", "-y", "demo", "echo", "text=x"][..],
        &["read", "demo", "fixture://docs/readme"][..],
        &["prompt", "demo", "plain"][..],
    ] {
        let mut cmd = dir.command(args);
        cmd.env(ALLOWLIST, "demo");
        let out = within_the_ceiling(&cmd, 16 << 20);
        assert_eq!(out.code, Some(4), "{}", cmd.report(&out));
        assert_contains(&out.stderr, "server 'demo'");
        assert_contains(&out.stderr, "MiB of memory once parsed");
        assert_contains(&out.stderr, "raise --max-message");
    }
    // list runs three such servers in parallel: within the sum.
    let three: Vec<(&str, Value)> = ["a", "b", "c"]
        .into_iter()
        .map(|n| (n, fixture_server(&["--tiny-tools", "500000"])))
        .collect();
    write_mcp_json(&dir, &three);
    let mut cmd = dir.command(["list"]);
    cmd.env(ALLOWLIST, "a,b,c");
    let out = within_the_ceiling(&cmd, 3 * (16 << 20));
    assert_ne!(out.code, Some(0), "{}", cmd.report(&out));
    for name in ["a", "b", "c"] {
        assert_contains(&out.stderr, &format!("server '{name}'"));
    }
    assert_contains(&out.stderr, "MiB of memory once parsed");
    // The bound scales with --max-message: 2,000 blocks fit in 1M, 5,000
    // do not.
    for (n, code) in [("2000", 0), ("5000", 4)] {
        write_mcp_json(
            &dir,
            &[("demo", fixture_server(&["--tiny-blocks", n]))],
        );
        let mut cmd = dir.command(["call", "-y", "demo", "echo", "text=x"]);
        cmd.args(["--max-message", "1M", "--json"]).env(ALLOWLIST, "demo");
        let out = cmd.run();
        assert_eq!(out.code, Some(code), "{}", cmd.report(&out));
    }
}
