//! The Linux calls behind the sandbox: Landlock (rule sets built in the
//! parent), user and network namespaces, `no_new_privs`. Besides `sys.rs`
//! this is the one module with `unsafe`; each block is one system call on
//! values prepared before it.
//!
//! The split follows the rule that nothing may allocate between `fork` and
//! `exec`: [`Ruleset::build`] opens every path and adds every rule in the
//! parent, and [`ChildSteps::apply`] (run by `pre_exec` in the child) only
//! makes system calls on integers and byte arrays it was handed.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

// Landlock's ABI (include/uapi/linux/landlock.h).
const CREATE_RULESET_VERSION: u32 = 1;
const RULE_PATH_BENEATH: libc::c_int = 1;
const RULE_NET_PORT: libc::c_int = 2;

/// Filesystem rights, by the ABI that introduced them.
pub(crate) mod fs {
    pub(crate) const EXECUTE: u64 = 1 << 0;
    pub(crate) const WRITE_FILE: u64 = 1 << 1;
    pub(crate) const READ_FILE: u64 = 1 << 2;
    pub(crate) const READ_DIR: u64 = 1 << 3;
    /// Every right of ABI 1 (bits 0 to 12).
    pub(crate) const ABI1: u64 = (1 << 13) - 1;
    pub(crate) const REFER: u64 = 1 << 13;
    pub(crate) const TRUNCATE: u64 = 1 << 14;
    pub(crate) const IOCTL_DEV: u64 = 1 << 15;
    /// The rights that apply to a file that is not a directory.
    pub(crate) const FILE: u64 =
        EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;
    /// Reading and running, nothing else.
    pub(crate) const READ: u64 = EXECUTE | READ_FILE | READ_DIR;
}

/// TCP rights (ABI 4).
pub(crate) mod net {
    pub(crate) const BIND_TCP: u64 = 1 << 0;
    pub(crate) const CONNECT_TCP: u64 = 1 << 1;
}

/// Scopes (ABI 6): abstract Unix sockets and signals outside the domain.
pub(crate) const SCOPE_ALL: u64 = (1 << 0) | (1 << 1);

/// Every filesystem right the kernel of Landlock ABI `abi` knows.
pub(crate) fn fs_rights(abi: u32) -> u64 {
    let mut r = fs::ABI1;
    if abi >= 2 {
        r |= fs::REFER;
    }
    if abi >= 3 {
        r |= fs::TRUNCATE;
    }
    if abi >= 5 {
        r |= fs::IOCTL_DEV;
    }
    r
}

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

#[repr(C)]
struct NetPortAttr {
    allowed_access: u64,
    port: u64,
}

/// The Landlock ABI version of the running kernel; 0 when Landlock is
/// not built in or is disabled.
pub(crate) fn landlock_abi() -> u32 {
    // SAFETY: the version query takes no attribute.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(r).unwrap_or(0)
}

/// A Landlock rule set with its rules added, ready to be enforced in a
/// child. Closed with the value (the child's copy closes at `exec`).
#[derive(Debug)]
pub(crate) struct Ruleset {
    fd: OwnedFd,
}

impl Ruleset {
    /// A rule set handling `fs` rights, `net` rights and `scoped`, with
    /// `paths` (each with its rights; rights that do not apply to a
    /// non-directory are dropped for one) and TCP `ports` (each with its
    /// rights). Paths must exist: the error names the one that does not.
    pub(crate) fn build(
        fs: u64,
        net: u64,
        scoped: u64,
        paths: &[(&Path, u64)],
        ports: &[(u16, u64)],
    ) -> io::Result<Ruleset> {
        let attr = RulesetAttr {
            handled_access_fs: fs,
            handled_access_net: net,
            scoped,
        };
        // SAFETY: `attr` is a valid attribute of the size passed.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &attr as *const RulesetAttr,
                std::mem::size_of::<RulesetAttr>(),
                0u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor that nothing else owns.
        let ruleset =
            Ruleset { fd: unsafe { OwnedFd::from_raw_fd(r as i32) } };
        for (path, rights) in paths {
            let c = std::ffi::CString::new(path.as_os_str().as_bytes())
                .map_err(|_| io::Error::other("NUL byte in a path"))?;
            // SAFETY: a NUL-terminated path; O_PATH opens nothing for I/O.
            let fd = unsafe {
                libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC)
            };
            if fd < 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(
                    e.kind(),
                    format!("{}: {e}", path.display()),
                ));
            }
            // SAFETY: the descriptor just opened.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let dir = is_dir(&fd);
            let allowed = if dir { *rights } else { *rights & fs::FILE } & fs;
            if allowed == 0 {
                continue;
            }
            let rule = PathBeneathAttr {
                allowed_access: allowed,
                parent_fd: fd.as_raw_fd(),
            };
            // SAFETY: a valid rule for the rule set's descriptor.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_landlock_add_rule,
                    ruleset.fd.as_raw_fd(),
                    RULE_PATH_BENEATH,
                    &rule as *const PathBeneathAttr,
                    0u32,
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(
                    e.kind(),
                    format!("{}: {e}", path.display()),
                ));
            }
        }
        for (port, rights) in ports {
            let rule = NetPortAttr {
                allowed_access: *rights & net,
                port: u64::from(*port),
            };
            if rule.allowed_access == 0 {
                continue;
            }
            // SAFETY: a valid rule for the rule set's descriptor.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_landlock_add_rule,
                    ruleset.fd.as_raw_fd(),
                    RULE_NET_PORT,
                    &rule as *const NetPortAttr,
                    0u32,
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(
                    e.kind(),
                    format!("port {port}: {e}"),
                ));
            }
        }
        Ok(ruleset)
    }

    pub(crate) fn raw(&self) -> i32 {
        self.fd.as_raw_fd()
    }
}

fn is_dir(fd: &OwnedFd) -> bool {
    // SAFETY: `st` is written by fstat before it is read.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::fstat(fd.as_raw_fd(), &mut st) };
    r == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFDIR
}

/// Whether this process may create a user namespace with a network
/// namespace: asked once of a forked child that tries and exits.
pub(crate) fn user_namespaces_work() -> bool {
    static ANSWER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ANSWER.get_or_init(|| {
        // SAFETY: the child makes two system calls and exits; it touches
        // no lock or allocation of the parent.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let ok = unsafe {
                libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET)
            };
            unsafe { libc::_exit(if ok == 0 { 0 } else { 1 }) };
        }
        if pid < 0 {
            return false;
        }
        let mut status = 0;
        loop {
            // SAFETY: waiting for the child just forked.
            let r = unsafe { libc::waitpid(pid, &mut status, 0) };
            if r == pid {
                break;
            }
            if r < 0
                && io::Error::last_os_error().kind()
                    != io::ErrorKind::Interrupted
            {
                return false;
            }
        }
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    })
}

/// A short fixed buffer, so that the child writes without allocating.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line {
    buf: [u8; 40],
    len: usize,
}

impl Line {
    fn new(text: &str) -> Line {
        let mut buf = [0; 40];
        let len = text.len().min(buf.len());
        buf[..len].copy_from_slice(&text.as_bytes()[..len]);
        Line { buf, len }
    }
}

/// What the child does between `fork` and `exec`, in this order: a new
/// user and network namespace (with the user's own uid and gid mapped, and
/// `lo` up when asked), `no_new_privs`, then the Landlock rule set.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChildSteps {
    pub(crate) unshare_net: bool,
    pub(crate) loopback_up: bool,
    /// The rule set's descriptor, or -1 for none.
    pub(crate) ruleset: i32,
    uid_map: Line,
    gid_map: Line,
}

impl ChildSteps {
    pub(crate) fn new(
        unshare_net: bool,
        loopback_up: bool,
        ruleset: i32,
    ) -> ChildSteps {
        // SAFETY: plain getters.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        ChildSteps {
            unshare_net,
            loopback_up,
            ruleset,
            uid_map: Line::new(&format!("{uid} {uid} 1\n")),
            gid_map: Line::new(&format!("{gid} {gid} 1\n")),
        }
    }

    /// Runs in the child: system calls only, no allocation.
    pub(crate) fn apply(&self) -> io::Result<()> {
        if self.unshare_net {
            // SAFETY: unshare takes flags only.
            if unsafe {
                libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET)
            } != 0
            {
                return Err(io::Error::last_os_error());
            }
            write_proc(c"/proc/self/setgroups", b"deny\n")?;
            write_proc(
                c"/proc/self/uid_map",
                &self.uid_map.buf[..self.uid_map.len],
            )?;
            write_proc(
                c"/proc/self/gid_map",
                &self.gid_map.buf[..self.gid_map.len],
            )?;
            if self.loopback_up {
                loopback_up()?;
            }
        }
        // SAFETY: prctl with integer arguments.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if self.ruleset >= 0 {
            // SAFETY: the rule set's descriptor, inherited from the parent.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_landlock_restrict_self,
                    self.ruleset,
                    0u32,
                )
            };
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd =
        unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `bytes` is valid for its length.
    let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    let err = io::Error::last_os_error();
    unsafe { libc::close(fd) };
    if n != bytes.len() as isize {
        return Err(err);
    }
    Ok(())
}

/// Sets `lo` up in the new network namespace (SIOCSIFFLAGS).
fn loopback_up() -> io::Result<()> {
    // SAFETY: a datagram socket for the ioctl, closed below; `ifr` is a
    // zeroed ifreq with its name and flags set.
    unsafe {
        let s = libc::socket(
            libc::AF_INET,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            0,
        );
        if s < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        ifr.ifr_name[0] = b'l' as libc::c_char;
        ifr.ifr_name[1] = b'o' as libc::c_char;
        ifr.ifr_ifru.ifru_flags =
            (libc::IFF_UP | libc::IFF_LOOPBACK | libc::IFF_RUNNING) as i16;
        let r = libc::ioctl(s, libc::SIOCSIFFLAGS, &ifr);
        let err = io::Error::last_os_error();
        libc::close(s);
        if r != 0 {
            return Err(err);
        }
    }
    Ok(())
}

/// The running kernel's release, for messages ("6.8.0").
pub(crate) fn kernel_release() -> String {
    // SAFETY: `u` is written by uname before it is read.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".into();
    }
    let bytes: Vec<u8> =
        u.release.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
