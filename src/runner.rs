//! The one runner of the operator's own commands — pre-tool hooks, the
//! sampling command, credential commands (`token_command`,
//! `headers_command`): an argv without a shell, in the base environment
//! and its own process group, input as JSON on stdin, stdout capped,
//! stderr kept bounded, everything under one deadline. When it exits, or
//! the deadline or the cap is reached, its whole group is killed, and at
//! the deadline whatever still holds its pipes (Linux `/proc`) too. The
//! readers are threads never waited for past the deadline.
//!
//! It sits below the executor, `ask` and `auth`, which judge what it
//! returns ([`Ended`]).

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{deadline, spawn, sys};

/// How much of a command's stderr is kept for the reason; the rest is
/// read and dropped, so a chatty command is not stalled on a full pipe.
const KEPT_STDERR: usize = 64 * 1024;
/// How often the command's exit is polled while its output is awaited.
const POLL: Duration = Duration::from_millis(5);

/// Starts one command: its argv, no shell, the base environment (plus
/// `extra`) only, its own process group (registered for cleanup with no
/// window), pipes for all three streams.
fn start(argv: &[String], extra: &[&str]) -> std::io::Result<(Child, i32)> {
    let env = spawn::base_env(&|k| std::env::var(k).ok(), extra);
    spawn::start_group(&mut spawn::command(&argv[0], &argv[1..], &env))
}

/// "timed out after 10s", and why when the process itself had exited.
pub(crate) fn timed_out(timeout: Duration, exited: bool) -> String {
    format!(
        "timed out after {}{}",
        deadline::seconds(timeout),
        if exited { "; it exited but its output stayed open" } else { "" }
    )
}

/// Runs `argv` (no shell, base environment, own process group) with
/// `input` as JSON on stdin (nothing for `Value::Null`), by `timeout`,
/// keeping at most `cap` bytes of its stdout; whatever happens, nothing of
/// its group outlives it. The one runner of the operator's commands:
/// hooks, the sampling command and credential commands.
pub(crate) fn run_bounded(
    argv: &[String],
    input: &Value,
    timeout: Duration,
    cap: usize,
) -> Ended {
    run_bounded_with(argv, &[], input, timeout, cap)
}

/// [`run_bounded`] with the variables `extra` passed besides the base
/// set, when they are set.
pub(crate) fn run_bounded_with(
    argv: &[String],
    extra: &[&str],
    input: &Value,
    timeout: Duration,
    cap: usize,
) -> Ended {
    let deadline = Instant::now() + timeout;
    let (mut child, pgid) = match start(argv, extra) {
        Ok(c) => c,
        Err(e) => return Ended::NotStarted(e.to_string()),
    };
    let pipes = pipes_of(&child);
    let ended = supervise(&mut child, pgid, input, deadline, cap);
    sys::kill_group(pgid, sys::SIGKILL);
    let _ = child.wait();
    sys::wait_group_gone(pgid, Duration::from_millis(500));
    sys::unregister_group(pgid);
    // Killed by our own signal handling: that exit (130/143) is the answer.
    sys::wait_if_closing();
    if let Ended::TimedOut { .. } = ended {
        // What holds its pipes open now has left its group: it goes too.
        for pid in holders(&pipes) {
            sys::kill_and_reap(pid, Duration::from_millis(500));
        }
    }
    ended
}

/// The identities of the hook's three pipes (`pipe:[INODE]`, as Linux
/// shows them under `/proc/PID/fd`); empty where there is no `/proc`.
fn pipes_of(child: &Child) -> Vec<PathBuf> {
    let fds = [
        child.stdin.as_ref().map(AsRawFd::as_raw_fd),
        child.stdout.as_ref().map(AsRawFd::as_raw_fd),
        child.stderr.as_ref().map(AsRawFd::as_raw_fd),
    ];
    fds.into_iter()
        .flatten()
        .filter_map(|fd| {
            std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()
        })
        .collect()
}

/// The processes other than this one that hold one of `pipes` open. Only
/// the hook and its descendants can (our ends are close-on-exec), so after
/// its group is gone these are descendants that left the group (a new
/// session, say) and would otherwise live on.
fn holders(pipes: &[PathBuf]) -> Vec<i32> {
    if pipes.is_empty() {
        return vec![];
    }
    sys::other_processes()
        .into_iter()
        .filter_map(|(pid, dir)| {
            let fds = std::fs::read_dir(dir.join("fd")).ok()?;
            let holds = fds.flatten().any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|l| pipes.contains(&l))
            });
            holds.then_some(pid)
        })
        .collect()
}

/// How running a command ended.
pub(crate) enum Ended {
    /// It exited and both its stdout and stderr reached end of file.
    Done { status: ExitStatus, stdout: Vec<u8>, stderr: Vec<u8> },
    /// It printed more than its cap on stdout.
    TooMuch,
    /// It could not be started (why).
    NotStarted(String),
    /// The deadline passed first (`exited`: the process itself had ended).
    TimedOut { exited: bool },
}

/// What one reader thread read before end of file (or before the cap).
struct Captured {
    stderr: bool,
    bytes: Vec<u8>,
    over: bool,
}

/// Feeds `input` to the hook and collects its output and exit, all by
/// `deadline`. The writer and readers are detached threads: they end when
/// the pipes close, and nothing here waits for them past the deadline.
fn supervise(
    child: &mut Child,
    pgid: i32,
    input: &Value,
    deadline: Instant,
    cap: usize,
) -> Ended {
    let bytes = match input {
        Value::Null => vec![],
        v => v.to_string().into_bytes(),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that never reads its stdin must not hold us; the write
        // fails (EPIPE) once the group is killed.
        std::thread::spawn(move || stdin.write_all(&bytes));
    }
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        read_capped(out, false, cap, tx.clone());
    }
    if let Some(err) = child.stderr.take() {
        read_capped(err, true, KEPT_STDERR, tx);
    }
    let (mut status, mut stdout, mut stderr) = (None, None, None);
    loop {
        if status.is_none()
            && let Ok(Some(st)) = child.try_wait()
        {
            status = Some(st);
            // Leftovers in its group die now, so its pipes can close.
            sys::kill_group(pgid, sys::SIGKILL);
        }
        if let (Some(status), Some(stdout), Some(stderr)) =
            (status, &mut stdout, &mut stderr)
        {
            return Ended::Done {
                status,
                stdout: std::mem::take(stdout),
                stderr: std::mem::take(stderr),
            };
        }
        let now = Instant::now();
        if now >= deadline {
            return Ended::TimedOut { exited: status.is_some() };
        }
        if let Ok(c) = rx.recv_timeout(POLL.min(deadline - now)) {
            if c.over && !c.stderr {
                return Ended::TooMuch;
            }
            *(if c.stderr { &mut stderr } else { &mut stdout }) =
                Some(c.bytes);
        }
    }
}

/// Reads `r` on a thread of its own until end of file, keeping at most
/// `cap` bytes, and sends what it kept. stdout stops at the cap (what
/// follows cannot matter: it denies); stderr is drained past it.
fn read_capped(
    r: impl Read + Send + 'static,
    stderr: bool,
    cap: usize,
    tx: mpsc::Sender<Captured>,
) {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut r = r;
        let mut buf = [0u8; 8192];
        let mut over = false;
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let room = cap - kept.len();
                    kept.extend_from_slice(&buf[..n.min(room)]);
                    if n > room {
                        over = true;
                        if !stderr {
                            break;
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send(Captured { stderr, bytes: kept, over });
    });
}
