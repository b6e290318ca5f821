//! Starting a child process isolated from ours: the one place that decides
//! what a stdio server, a hook or the login browser inherits.
//!
//! A child gets a cleared environment plus the base set ([`BASE_ENV`]) and
//! what its caller names, runs its argv directly (never through a shell),
//! starts with no signal blocked (our threads block the termination signals
//! for the signal thread, and a mask survives exec), and, when it is ours
//! to end, leads a process group of its own that is registered for cleanup
//! on a signal with no window between the spawn and the registration
//! ([`sys::spawn_registered`]). Ending the group is the caller's job (see
//! the stdio transport's `close`); [`sys::unregister_group`] follows.
//!
//! The browser the login opens is deliberately not put in a group of its
//! own nor registered: it belongs to the user, not to this run.

use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use crate::sys;

/// The variables a child inherits from the invoking environment when they
/// are set; everything else must be named by its configuration.
pub(crate) const BASE_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "LC_CTYPE",
    "TERM", "TMPDIR", "TZ",
];

/// The base set plus the `extra` names, each taken from `lookup` when set.
pub(crate) fn base_env(
    lookup: &dyn Fn(&str) -> Option<String>,
    extra: &[&str],
) -> Vec<(String, String)> {
    BASE_ENV
        .iter()
        .chain(extra)
        .filter_map(|&k| lookup(k).map(|v| (k.to_string(), v)))
        .collect()
}

/// A command for `program args` with exactly the environment `env`, no
/// signal blocked, and stdin, stdout and stderr piped (callers may change
/// them before starting it).
pub(crate) fn command(
    program: impl AsRef<OsStr>,
    args: &[impl AsRef<OsStr>],
    env: &[(String, String)],
) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    sys::unblock_signals_in_child(&mut cmd);
    cmd
}

/// Starts `cmd` as the leader of a new process group, registered for
/// cleanup on a signal before a signal can be handled. Returns the child
/// and its group id; the caller ends the group and unregisters it.
pub(crate) fn start_group(cmd: &mut Command) -> std::io::Result<(Child, i32)> {
    cmd.process_group(0);
    sys::spawn_registered(cmd)
}

/// Starts `cmd` as the leader of a new session (and so of a new process
/// group with the same id), registered for cleanup like
/// [`start_group`]: a stdio server, so that what leaves its group but not
/// its session can be found and ended with it ([`sys::end_session`]). The
/// server has no controlling terminal, as it had none to read from in a
/// background group before.
pub(crate) fn start_session(
    cmd: &mut Command,
) -> std::io::Result<(Child, i32)> {
    sys::new_session_in_child(cmd);
    sys::spawn_registered(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_env_takes_only_the_named_variables_that_are_set() {
        let lookup = |k: &str| match k {
            "HOME" => Some("/home/u".to_string()),
            "SECRET" | "DISPLAY" => Some(k.to_lowercase()),
            _ => None,
        };
        assert_eq!(
            base_env(&lookup, &["DISPLAY"]),
            vec![
                ("HOME".to_string(), "/home/u".to_string()),
                ("DISPLAY".to_string(), "display".to_string()),
            ]
        );
    }
}
