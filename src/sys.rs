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
//! 128 + the signal. Children do not inherit the blocked mask: std resets
//! the signal mask in the child before `exec`.
#![allow(unsafe_code)]

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Process groups of the servers that are running now.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Registers a server's process group for cleanup on a signal.
pub(crate) fn register_group(pgid: i32) {
    if let Ok(mut g) = GROUPS.lock() {
        g.push(pgid);
    }
}

pub(crate) fn unregister_group(pgid: i32) {
    if let Ok(mut g) = GROUPS.lock() {
        g.retain(|&p| p != pgid);
    }
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

/// SIGTERM to the group, up to `grace` for it to go, then SIGKILL.
/// Returns the signal that ended it (0 when it was already gone).
pub(crate) fn terminate_group(pgid: i32, grace: Duration) -> i32 {
    if !kill_group(pgid, libc::SIGTERM) {
        return 0;
    }
    let start = Instant::now();
    while start.elapsed() < grace {
        std::thread::sleep(Duration::from_millis(5));
        if !group_alive(pgid) {
            return libc::SIGTERM;
        }
    }
    kill_group(pgid, libc::SIGKILL);
    libc::SIGKILL
}

pub(crate) use libc::{SIGKILL, SIGTERM};

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
    let spawned = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut sig: libc::c_int = 0;
            // SAFETY: sigwait reads the set we own and writes one int.
            let rc = unsafe { libc::sigwait(&set, &mut sig) };
            if rc != 0 {
                return;
            }
            let groups: Vec<i32> =
                GROUPS.lock().map(|g| g.clone()).unwrap_or_default();
            for &g in &groups {
                kill_group(g, libc::SIGTERM);
            }
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(500)
                && groups.iter().any(|&g| group_alive(g))
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            for &g in &groups {
                kill_group(g, libc::SIGKILL);
            }
            let code = if sig == libc::SIGINT { 130 } else { 128 + sig };
            crate::msg::error(&format!(
                "interrupted by {}; closed {} server(s)",
                if sig == libc::SIGINT { "SIGINT" } else { "a signal" },
                groups.len()
            ));
            std::process::exit(code);
        });
    if spawned.is_err() {
        // Without the thread, restore default delivery so Ctrl-C still
        // ends the program.
        // SAFETY: as above.
        unsafe {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}
