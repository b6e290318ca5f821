//! The few things std cannot do: signalling process groups and waiting
//! for SIGINT/SIGTERM on a thread of our own.
//!
//! This is the only module with `unsafe`; each block is one libc call on
//! plain integers or a stack-allocated `sigset_t`.
//!
//! Signals: before any other thread exists, `main` blocks SIGINT, SIGTERM
//! and SIGHUP and starts one thread that waits for them with `sigwait`.
//! When one arrives, every registered server process group is terminated
//! (SIGTERM, a short grace, then SIGKILL) and the process exits with
//! 128 + the signal. Children would inherit the blocked mask across exec,
//! so every child is started through [`unblock_signals_in_child`].
//!
//! No child can outlive a signal unnoticed: [`spawn_registered`] spawns and
//! registers a group under the lock that the signal thread takes to read
//! the groups, and the signal thread marks the shutdown under the same
//! lock, after which nothing is spawned. So a child is either never
//! started or registered before the signal thread looks.
//!
//! A stdio server leads a session of its own ([`crate::spawn::start_session`]),
//! so a helper that leaves its process group (`setpgid`) is still found:
//! on Linux the members of the session are read from `/proc` and ended with
//! the group ([`end_session`]). Only what starts a session of its own
//! (`setsid`) escapes; elsewhere, what leaves the group does; see GUIDE.md.
#![allow(unsafe_code)]

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The process groups of the children running now (servers, hooks), and
/// whether the signal thread has begun closing them.
struct Groups {
    live: Vec<i32>,
    closing: bool,
}

static GROUPS: Mutex<Groups> =
    Mutex::new(Groups { live: Vec::new(), closing: false });

/// Starts `cmd` (which must put its child in a new process group) and
/// registers that group for cleanup on a signal, with no window between
/// the two: the lock the signal thread takes to read the registered groups
/// is held across the spawn, so the signal thread either runs before the
/// spawn (then `closing` is set and nothing is spawned) or after the group
/// is registered (then it is terminated with the others). A signal that
/// arrives during the spawn waits in the signal thread until the lock is
/// free. The child has exec'd (and called setpgid) when `spawn` returns,
/// so its pid is its group id.
pub(crate) fn spawn_registered(
    cmd: &mut std::process::Command,
) -> std::io::Result<(std::process::Child, i32)> {
    let mut g = GROUPS.lock().unwrap_or_else(|p| p.into_inner());
    if g.closing {
        drop(g);
        wait_if_closing();
        return Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "rivumi-mcp is shutting down after a signal",
        ));
    }
    let child = cmd.spawn()?;
    let pgid = child.id() as i32;
    g.live.push(pgid);
    Ok((child, pgid))
}

pub(crate) fn unregister_group(pgid: i32) {
    let mut g = GROUPS.lock().unwrap_or_else(|p| p.into_inner());
    g.live.retain(|&p| p != pgid);
}

/// When the signal thread is closing the children (and is about to end
/// the process with 128 + the signal), waits for it instead of letting the
/// caller report the consequences (a server that died, a spawn refused)
/// and exit with another code first. Returns at once otherwise; the wait
/// is bounded as a backstop.
pub(crate) fn wait_if_closing() {
    while GROUPS.lock().map(|g| g.closing).unwrap_or(true) {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Marks the start of the shutdown after a signal (no child may start
/// from now on) and returns the groups to close.
fn begin_closing() -> Vec<i32> {
    let mut g = GROUPS.lock().unwrap_or_else(|p| p.into_inner());
    g.closing = true;
    g.live.clone()
}

/// Blocks until process `pid` (our child) has exited, without reaping it:
/// its `Child` still collects the status. Returns at once when `pid` is
/// not (or no longer) our child.
pub(crate) fn wait_exited_nowait(pid: i32) {
    loop {
        // SAFETY: waitid writes one siginfo_t we own; WNOWAIT leaves the
        // child waitable.
        let r = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0
            || std::io::Error::last_os_error().raw_os_error()
                != Some(libc::EINTR)
        {
            return;
        }
    }
}

/// Waits until process `pid` (our child, not yet reaped) has exited or
/// `limit` has passed, whichever comes first, without reaping it: on
/// Linux on a pidfd (woken by the exit itself), elsewhere (or when no
/// pidfd can be had) by sleeping at most 2 ms, a step of the caller's
/// polling loop.
pub(crate) fn await_exit(pid: i32, limit: Duration) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: pidfd_open takes two integers and returns a new
        // descriptor (closed below) or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if let Ok(fd) = i32::try_from(fd)
            && fd >= 0
        {
            let mut pfd =
                libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            let ms = i32::try_from(limit.as_micros().div_ceil(1000))
                .unwrap_or(i32::MAX);
            // SAFETY: poll on one pollfd we own, for a bounded time; then
            // the descriptor pidfd_open gave us is closed, once.
            unsafe {
                libc::poll(&mut pfd, 1, ms);
                libc::close(fd);
            }
            return;
        }
    }
    let _ = pid;
    std::thread::sleep(limit.min(Duration::from_millis(2)));
}

/// Sends `sig` to every process of group `pgid`. False when no process
/// of the group is left (or the group is not ours to signal).
pub(crate) fn kill_group(pgid: i32, sig: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill(2) with a negative pid signals a process group; it
    // takes plain integers and touches no memory of ours.
    unsafe { libc::kill(-pgid, sig) == 0 }
}

/// Whether any process of group `pgid` still exists (zombies included
/// until reaped).
pub(crate) fn group_alive(pgid: i32) -> bool {
    kill_group(pgid, 0)
}

/// Keeps glibc's allocator to one arena. rivumi-mcp runs a few threads
/// per server (one per pipe, one waiting for its exit), and glibc would
/// give each thread that allocates an arena of its own, costing resident
/// memory for no gain: no thread here allocates in a hot loop. Must run
/// before any other thread starts. Elsewhere a no-op.
pub(crate) fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes two integers; called before other threads.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Makes this process the reaper of its orphaned descendants (Linux), so a
/// server's grandchild that outlives the server is reparented to us and
/// its zombie can be reaped by [`reap_group`] instead of lingering until
/// init gets to it. Elsewhere a no-op.
pub(crate) fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) takes integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Reaps every exited process of group `pgid` that is our child (the
/// leader must already have been waited for by its `Child`).
pub(crate) fn reap_group(pgid: i32) {
    if pgid <= 1 {
        return;
    }
    loop {
        let mut status = 0;
        // SAFETY: waitpid on a process group with WNOHANG; writes one int.
        let r = unsafe { libc::waitpid(-pgid, &mut status, libc::WNOHANG) };
        if r <= 0 {
            return;
        }
    }
}

/// Waits up to `limit` for group `pgid` to be gone, reaping as it goes.
pub(crate) fn wait_group_gone(pgid: i32, limit: Duration) -> bool {
    let start = Instant::now();
    loop {
        reap_group(pgid);
        if !group_alive(pgid) {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Kills one process with SIGKILL and waits up to `limit` for it to be
/// gone, reaping it when it is our child (a hook's orphan reparented to us
/// as the subreaper).
pub(crate) fn kill_and_reap(pid: i32, limit: Duration) {
    if pid <= 1 {
        return;
    }
    // SAFETY: kill(2) on one pid; plain integers only.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: waitpid on one pid with WNOHANG; writes one int.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        // SAFETY: kill(2) with signal 0 only checks that the pid exists.
        if r == pid || (r < 0 && unsafe { libc::kill(pid, 0) } != 0) {
            return;
        }
        if start.elapsed() >= limit {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The processes (other than this one) whose session is `sid`: on Linux
/// from `/proc`; elsewhere none are found. Never our own session.
pub(crate) fn session_members(sid: i32) -> Vec<i32> {
    // SAFETY: getsid(0) takes an integer and reads no memory of ours.
    let own = unsafe { libc::getsid(0) };
    if sid <= 1 || sid == own {
        return vec![];
    }
    // Every member of a server's session descends from the server (a
    // process joins a session only by being forked into it), and as the
    // subreaper we inherit the orphans: so every member is one of our
    // descendants. With no child at all (the common close: the server
    // exited, was reaped and left nothing) there is none; otherwise our
    // descendants are walked where the kernel lists children. Not the
    // subreaper (or no lists): every process.
    let candidates = if is_subreaper() {
        if childless() {
            return vec![];
        }
        descendants()
    } else {
        None
    };
    let candidates = candidates.unwrap_or_else(|| {
        other_processes().into_iter().map(|(pid, _)| pid).collect()
    });
    candidates
        .into_iter()
        .filter(|&pid| session_of(pid) == Some(sid))
        .collect()
}

/// The session of process `pid`; `None` when it is gone.
fn session_of(pid: i32) -> Option<i32> {
    // SAFETY: getsid takes an integer and reads no memory of ours.
    let sid = unsafe { libc::getsid(pid) };
    (sid > 0).then_some(sid)
}

/// Whether this process is the reaper of its orphaned descendants
/// ([`become_subreaper`]; Linux).
fn is_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        let mut on: libc::c_int = 0;
        // SAFETY: prctl(PR_GET_CHILD_SUBREAPER) writes one int we own.
        let r = unsafe {
            libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &raw mut on, 0, 0, 0)
        };
        r == 0 && on != 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Whether this process has no child at all, running or waiting to be
/// reaped (`waitid` answers ECHILD). Reaps nothing; any other answer is
/// taken as "some".
fn childless() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: waitid writes one siginfo_t we own; WNOHANG returns at
        // once and WNOWAIT leaves any exited child waitable. __WALL counts
        // children whatever signal they report their exit with.
        let r = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_ALL,
                0,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT | libc::__WALL,
            )
        };
        r < 0
            && std::io::Error::last_os_error().raw_os_error()
                == Some(libc::ECHILD)
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// The processes that descend from this one, from the `children` lists of
/// `/proc/PID/task/TID/` (Linux); `None` when the kernel does not keep
/// them (the calling thread has no list). A task that exits while it is
/// read is skipped. Bounded: at most 4,096 processes are walked.
fn descendants() -> Option<Vec<i32>> {
    std::fs::symlink_metadata("/proc/thread-self/children").ok()?;
    let children = |pid: i32, out: &mut Vec<i32>| {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return;
        };
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(
                    s.split_ascii_whitespace()
                        .filter_map(|w| w.parse::<i32>().ok()),
                );
            }
        }
    };
    let mut found = vec![];
    children(std::process::id() as i32, &mut found);
    let mut i = 0;
    while i < found.len() && found.len() < 4096 {
        let pid = found[i];
        children(pid, &mut found);
        i += 1;
    }
    Some(found)
}

/// Every process but this one, with its `/proc/PID` directory (Linux;
/// none where there is no `/proc`).
pub(crate) fn other_processes() -> Vec<(i32, std::path::PathBuf)> {
    let me = std::process::id() as i32;
    let Ok(procs) = std::fs::read_dir("/proc") else { return vec![] };
    procs
        .flatten()
        .filter_map(|p| {
            let pid: i32 = p.file_name().to_str()?.parse().ok()?;
            (pid != me).then(|| (pid, p.path()))
        })
        .collect()
}

/// Ends what is left of session `sid` (the members that left the
/// server's process group but not its session): SIGTERM, up to `grace`
/// for them to go, then SIGKILL, reaping those that are our children (as
/// the subreaper, orphans are). Returns how many were found.
pub(crate) fn end_session(sid: i32, grace: Duration) -> usize {
    let found = session_members(sid);
    if found.is_empty() {
        return 0;
    }
    let signal = |sig: i32| {
        for &pid in &found {
            // SAFETY: kill(2) on one pid; plain integers only.
            unsafe { libc::kill(pid, sig) };
        }
    };
    let reap = || {
        for &pid in &found {
            let mut status = 0;
            // SAFETY: waitpid on one pid with WNOHANG; writes one int.
            unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        }
    };
    signal(libc::SIGTERM);
    let start = Instant::now();
    loop {
        reap();
        if session_members(sid).is_empty() {
            return found.len();
        }
        if start.elapsed() >= grace {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    signal(libc::SIGKILL);
    let start = Instant::now();
    while start.elapsed() < grace {
        reap();
        if session_members(sid).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    found.len()
}

/// The width of the terminal on stdout, in columns; `None` when stdout
/// is not a terminal (or says 0).
pub(crate) fn stdout_columns() -> Option<usize> {
    // SAFETY: TIOCGWINSZ writes one winsize we own; fd 1 is only queried.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) };
    (rc == 0 && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}

pub(crate) use libc::{SIGKILL, SIGTERM};

/// What records a signal's effects (the journal): told of the signal
/// before the servers are closed (`false`) and after (`true`). Set once,
/// at start, so that this module depends on nothing above it.
static SIGNAL_OBSERVER: std::sync::OnceLock<fn(&'static str, bool)> =
    std::sync::OnceLock::new();

/// Sets what is told of a terminating signal (see [`SIGNAL_OBSERVER`]).
pub(crate) fn observe_signals(f: fn(&'static str, bool)) {
    let _ = SIGNAL_OBSERVER.set(f);
}

fn observe_signal(name: &'static str, closed: bool) {
    if let Some(f) = SIGNAL_OBSERVER.get() {
        f(name, closed);
    }
}

/// The process environment, the one lookup every command is given.
pub(crate) fn lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill the set we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        set
    }
}

/// Blocks the termination signals in this (the main) thread, so every
/// thread started afterwards inherits the mask, and starts the thread
/// that handles them. Must run before any other thread is started.
pub(crate) fn install_signal_thread() {
    let set = signal_set();
    // SAFETY: pthread_sigmask with a valid set and a null old-set pointer.
    let rc = unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut())
    };
    if rc != 0 {
        return;
    }
    let spawned =
        std::thread::Builder::new().name("signals".into()).spawn(move || {
            let mut sig: libc::c_int = 0;
            // SAFETY: sigwait reads the set we own and writes one int.
            let rc = unsafe { libc::sigwait(&set, &mut sig) };
            if rc != 0 {
                return;
            }
            let name = match sig {
                libc::SIGINT => "SIGINT",
                libc::SIGTERM => "SIGTERM",
                _ => "SIGHUP",
            };
            observe_signal(name, false);
            // Requests in flight are cancelled on the wire first, while
            // their servers still run.
            if run_interrupt_hooks() {
                std::thread::sleep(Duration::from_millis(100));
            }
            let groups = begin_closing();
            for &g in &groups {
                kill_group(g, libc::SIGTERM);
            }
            let start = Instant::now();
            for &g in &groups {
                let left =
                    Duration::from_millis(500).saturating_sub(start.elapsed());
                if !wait_group_gone(g, left) {
                    kill_group(g, libc::SIGKILL);
                    wait_group_gone(g, Duration::from_millis(500));
                }
            }
            // A server's group id is its session id: what left the group
            // but not the session goes too (hooks share our session, and
            // `session_members` never returns our own).
            for &g in &groups {
                end_session(g, Duration::from_millis(200));
            }
            observe_signal(name, true);
            let code = crate::error::Kind::Signal(sig).exit_code();
            crate::msg::error(&format!(
                "interrupted by {name}; closed {} server(s)",
                groups.len()
            ));

            std::process::exit(i32::from(code));
        });
    if spawned.is_err() {
        // Without the thread, restore default delivery so Ctrl-C still
        // ends the program.
        // SAFETY: as above.
        unsafe {
            libc::pthread_sigmask(
                libc::SIG_UNBLOCK,
                &set,
                std::ptr::null_mut(),
            );
        }
    }
}

/// What runs on SIGINT/SIGTERM/SIGHUP before servers are ended: the
/// cancellation of each request in flight, by key.
type Hook = std::sync::Arc<dyn Fn() + Send + Sync>;
static INTERRUPT_HOOKS: Mutex<Vec<(u64, Hook)>> = Mutex::new(Vec::new());
static NEXT_HOOK: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

/// Runs `hook` if a termination signal arrives while the returned guard
/// lives.
pub(crate) fn on_interrupt(hook: Hook) -> InterruptGuard {
    let key = NEXT_HOOK.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if let Ok(mut h) = INTERRUPT_HOOKS.lock() {
        h.push((key, hook));
    }
    InterruptGuard(key)
}

/// Unregisters its hook when dropped.
pub(crate) struct InterruptGuard(u64);

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        if let Ok(mut h) = INTERRUPT_HOOKS.lock() {
            h.retain(|(k, _)| *k != self.0);
        }
    }
}

/// Runs (and forgets) every hook; whether there was any.
fn run_interrupt_hooks() -> bool {
    let hooks: Vec<(u64, Hook)> = match INTERRUPT_HOOKS.lock() {
        Ok(mut h) => std::mem::take(&mut *h),
        Err(_) => return false,
    };
    for (_, hook) in &hooks {
        hook();
    }
    !hooks.is_empty()
}

/// Turns echo, canonical mode and signal keys off on the terminal `fd`
/// (reads return each byte; Ctrl-C arrives as a byte), returning the
/// settings to restore; `None` when `fd` is not a terminal.
pub(crate) fn tty_raw(fd: i32) -> Option<libc::termios> {
    // SAFETY: tcgetattr/tcsetattr on a caller's fd with termios values on
    // our stack.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut t) != 0 {
            return None;
        }
        let saved = t;
        t.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG);
        t.c_cc[libc::VMIN] = 1;
        t.c_cc[libc::VTIME] = 0;
        libc::tcsetattr(fd, libc::TCSANOW, &t);
        Some(saved)
    }
}

/// Restores terminal settings that [`tty_raw`] returned.
pub(crate) fn tty_restore(fd: i32, saved: &libc::termios) {
    // SAFETY: tcsetattr on a caller's fd with a termios it read before.
    unsafe {
        libc::tcsetattr(fd, libc::TCSANOW, saved);
    }
}

/// Waits until `fd` is readable, for at most `timeout`. False on timeout.
pub(crate) fn wait_readable(fd: i32, timeout: Duration) -> bool {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: poll on one pollfd we own, for a bounded time.
    let r = unsafe { libc::poll(&mut pfd, 1, ms) };
    r > 0
}

/// Makes `cmd`'s child start with no signal blocked. Our threads block
/// SIGINT/SIGTERM/SIGHUP (the signal thread waits for them), and a child
/// inherits the mask across exec: without this, a server would ignore the
/// SIGTERM of a graceful shutdown.
pub(crate) fn unblock_signals_in_child(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs between fork and exec and only calls
    // sigemptyset and pthread_sigmask, which are async-signal-safe, on a
    // set on its own stack.
    unsafe {
        cmd.pre_exec(|| {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::pthread_sigmask(
                libc::SIG_SETMASK,
                &set,
                std::ptr::null_mut(),
            );
            Ok(())
        });
    }
}

/// Makes `cmd`'s child the leader of a new session (and process group),
/// with no controlling terminal: a stdio server, and the detached daemon
/// (which outlives the shell that started it, out of reach of terminal
/// signals). Must not be combined with `process_group`: a group leader
/// cannot start a session.
pub(crate) fn new_session_in_child(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs between fork and exec and calls only
    // setsid, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The effective user id (credential files must belong to it).
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid takes nothing and cannot fail.
    unsafe { libc::geteuid() }
}

/// Takes an exclusive `flock` on `file`, waiting at most `limit`.
pub(crate) fn lock_exclusive(
    file: &std::fs::File,
    limit: Duration,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let start = Instant::now();
    loop {
        // SAFETY: flock on a descriptor we own, non-blocking.
        let r = unsafe {
            libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB)
        };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(e);
        }
        if start.elapsed() >= limit {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "another rivumi-mcp holds the credential lock",
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The user id of the process at the other end of a connected Unix
/// socket: `SO_PEERCRED` on Linux, `getpeereid` on the BSDs and macOS;
/// `None` when the system cannot say (the daemon then refuses).
pub(crate) fn peer_uid(fd: i32) -> Option<u32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: getsockopt writes at most `len` bytes into a ucred we
        // own on the stack.
        unsafe {
            let mut cred: libc::ucred = std::mem::zeroed();
            let mut len =
                std::mem::size_of::<libc::ucred>() as libc::socklen_t;
            let r = libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&raw mut cred).cast(),
                &mut len,
            );
            (r == 0 && len as usize == std::mem::size_of::<libc::ucred>())
                .then_some(cred.uid)
        }
    }
    #[cfg(any(
        target_os = "macos",
        target_os = "freebsd",
        target_os = "openbsd",
        target_os = "netbsd"
    ))]
    {
        // SAFETY: getpeereid writes two ints we own.
        unsafe {
            let mut uid: libc::uid_t = 0;
            let mut gid: libc::gid_t = 0;
            (libc::getpeereid(fd, &mut uid, &mut gid) == 0).then_some(uid)
        }
    }
    #[cfg(not(any(
        target_os = "linux",
        target_os = "android",
        target_os = "macos",
        target_os = "freebsd",
        target_os = "openbsd",
        target_os = "netbsd"
    )))]
    {
        let _ = fd;
        None
    }
}

/// The resident set size of this process now and at its peak, in KiB
/// (`VmRSS`, `VmHWM` of /proc/self/status on Linux; `None` elsewhere).
pub(crate) fn memory_kib() -> (Option<u64>, Option<u64>) {
    let Ok(text) = std::fs::read_to_string("/proc/self/status") else {
        return (None, None);
    };
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|r| r.trim().trim_end_matches("kB").trim().parse().ok())
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child of ours is among our descendants (where the kernel lists
    /// children at all).
    #[test]
    fn our_children_are_our_descendants() {
        let mut child =
            std::process::Command::new("sleep").arg("5").spawn().unwrap();
        if let Some(found) = descendants() {
            assert!(found.contains(&(child.id() as i32)), "{found:?}");
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// A child of ours, running or exited and not yet reaped, means we
    /// are not childless (the shortcut that skips the look for a
    /// server's session members must never fire then).
    #[test]
    fn a_child_running_or_unreaped_is_seen() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        assert!(!childless());
        wait_exited_nowait(child.id() as i32);
        assert!(!childless(), "an exited child not yet reaped");
        let _ = child.wait();
    }

    /// `await_exit` returns when the child exits, well before its limit,
    /// and leaves it to be reaped.
    #[test]
    fn await_exit_returns_at_the_exit() {
        let mut child =
            std::process::Command::new("sleep").arg("0.05").spawn().unwrap();
        let start = Instant::now();
        let pid = child.id() as i32;
        while !matches!(child.try_wait(), Ok(Some(_))) {
            assert!(start.elapsed() < Duration::from_secs(20), "never exited");
            await_exit(pid, Duration::from_secs(30));
        }
        assert!(start.elapsed() < Duration::from_secs(20));
    }

    /// Our own session is never a target, nor the init session.
    #[test]
    fn our_own_session_is_never_found() {
        // SAFETY: getsid(0) takes an integer only.
        let own = unsafe { libc::getsid(0) };
        assert!(session_members(own).is_empty());
        assert!(session_members(1).is_empty());
        assert!(session_members(0).is_empty());
    }
}
