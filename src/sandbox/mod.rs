//! The opt-in kernel sandbox of a stdio server: Landlock for the
//! filesystem, TCP ports and scoping, a user and network namespace for
//! `network: none|loopback`, and `no_new_privs`. No container runtime.
//!
//! [`Plan::decide`] decides everything in the invocation, before the
//! spawn: the paths and rights (the block's, plus what a program needs to
//! start — [`SYSTEM_READ`], the devices, the command's own directory — a
//! private temporary directory, the server's `cwd` and the `--root`
//! directories of this run) and the kernel features the block needs
//! (refused when missing, unless `best_effort`). [`Plan::make`], in the
//! process that spawns the server (the invocation, or the daemon handed
//! the [`Decision`] for a warm server), makes the temporary directory and
//! the Landlock rule set with every rule added. [`Plan::install`] hands
//! the child a `pre_exec` step that only makes system calls
//! (`kernel::ChildSteps`), so the server runs no instruction of its own
//! unconfined.
//!
//! `RIVUMI_MCP_SANDBOX_KERNEL` (e.g. `landlock=3 userns=off`) makes the
//! kernel look older than it is, to see how a block is refused; it can
//! only take features away.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::config::{Network, Sandbox};
use crate::error::{Error, Result};

#[cfg(target_os = "linux")]
mod kernel;

/// Directories every sandboxed server may read and execute beneath: the
/// system's programs, libraries and configuration.
pub(crate) const SYSTEM_READ: &[&str] =
    &["/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc"];
/// Read only: process and system information many runtimes read at start.
pub(crate) const SYSTEM_INFO: &[&str] = &["/proc", "/sys"];
/// Devices a server may read and write.
pub(crate) const DEVICES_RW: &[&str] =
    &["/dev/null", "/dev/full", "/dev/zero"];
/// Devices a server may read.
pub(crate) const DEVICES_READ: &[&str] = &["/dev/random", "/dev/urandom"];

/// The variable that makes the kernel look older (tests, docs).
pub(crate) const PRETEND_VAR: &str = "RIVUMI_MCP_SANDBOX_KERNEL";

/// What the kernel offers, possibly narrowed by [`PRETEND_VAR`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Features {
    landlock: u32,
    userns: bool,
}

/// A kernel feature a block needs, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// Landlock's filesystem rules (ABI 1, Linux 5.13).
    Filesystem,
    /// TCP port rules (ABI 4, Linux 6.7).
    Ports,
    /// Scoping signals and abstract Unix sockets (ABI 6, Linux 6.12).
    Scoping,
    /// Unprivileged user namespaces, for `network` "none" or "loopback".
    Namespaces,
}

impl Need {
    const ALL: [Need; 4] =
        [Need::Filesystem, Need::Ports, Need::Scoping, Need::Namespaces];

    /// Its word in a [`Decision`]'s form.
    fn name(self) -> &'static str {
        match self {
            Need::Filesystem => "filesystem",
            Need::Ports => "ports",
            Need::Scoping => "scoping",
            Need::Namespaces => "namespaces",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Need::Filesystem => {
                "Landlock filesystem rules (Landlock ABI 1, Linux 5.13)"
            }
            Need::Ports => {
                "Landlock TCP port rules (Landlock ABI 4, Linux 6.7)"
            }
            Need::Scoping => {
                "Landlock signal and abstract-socket scoping (Landlock ABI 6, \
                 Linux 6.12)"
            }
            Need::Namespaces => {
                "unprivileged user and network namespaces (for network \
                 \"none\" or \"loopback\")"
            }
        }
    }

    fn abi(self) -> u32 {
        match self {
            Need::Filesystem => 1,
            Need::Ports => 4,
            Need::Scoping => 6,
            Need::Namespaces => 0,
        }
    }
}

/// One path and what the server may do beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Grant {
    path: PathBuf,
    write: bool,
    /// Why it is granted, for `-v` and the journal.
    why: &'static str,
}

/// Every reason a path is granted ([`Grant::why`]).
const WHYS: &[&str] =
    &["system", "device", "command", "read", "write", "cwd", "root", "tmp"];

/// What [`Plan::decide`] decided for one launch, before anything is made:
/// the paths and rights, the network, the ports and the kernel features
/// the rules are built for. The daemon is handed it ([`Decision::to_json`])
/// to start a warm server in the same sandbox; the invocation has made
/// every check (the paths exist, the kernel has what the block needs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    grants: Vec<Grant>,
    network: Network,
    connect: Vec<u16>,
    bind: Vec<u16>,
    /// Features the kernel lacks and `best_effort` let pass.
    missing: Vec<Need>,
    features: Features,
}

impl Decision {
    /// Its form in a launch (paths, rights, network, ports, features):
    /// part of the key, so another sandbox is another server.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "grants": self.grants.iter().map(|g| json!(
                [g.path.display().to_string(), g.write, g.why]
            )).collect::<Vec<_>>(),
            "network": self.network.name(),
            "connect": self.connect,
            "bind": self.bind,
            "missing": self.missing.iter().map(|n| n.name()).collect::<Vec<_>>(),
            "landlock": self.features.landlock,
            "userns": self.features.userns,
        })
    }

    /// What it confines the server to, as [`Plan::summary`] says it
    /// (without the private temporary directory, which the spawning
    /// process makes).
    pub(crate) fn summary(&self) -> Value {
        let missing: Vec<&str> =
            self.missing.iter().map(|n| n.describe()).collect();
        summary(
            &self.grants,
            self.network,
            &self.connect,
            &self.bind,
            &missing,
        )
    }

    /// Why a server in this sandbox may not be kept warm, if so: the
    /// `--root` directories it is granted are this run's alone (a warm
    /// server would keep writing there after the run), and a path the
    /// daemon could not be handed exactly (relative, or not UTF-8) would
    /// confine it otherwise.
    pub(crate) fn not_lendable(&self) -> Option<&'static str> {
        if self.grants.iter().any(|g| g.why == "root") {
            return Some(
                "its sandbox grants --root directories for this run only, \
                 and a warm server would outlive the run",
            );
        }
        let exact =
            |g: &Grant| g.path.is_absolute() && g.path.to_str().is_some();
        if !self.grants.iter().all(exact) {
            return Some(
                "a path of its sandbox is relative or not UTF-8, and the \
                 daemon could not be handed it exactly",
            );
        }
        None
    }

    /// The decision [`Decision::to_json`] wrote; `Err` names what is
    /// malformed.
    pub(crate) fn from_json(
        v: &Value,
    ) -> std::result::Result<Decision, String> {
        let bad = |what: &str| format!("a malformed sandbox ({what})");
        let grants = v["grants"]
            .as_array()
            .ok_or_else(|| bad("grants"))?
            .iter()
            .map(|g| {
                let path = g[0].as_str().filter(|p| p.starts_with('/'))?;
                let why = WHYS.iter().find(|w| g[2].as_str() == Some(**w))?;
                Some(Grant { path: path.into(), write: g[1].as_bool()?, why })
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("a grant"))?;
        let network = [Network::None, Network::Loopback, Network::Any]
            .into_iter()
            .find(|n| v["network"].as_str() == Some(n.name()))
            .ok_or_else(|| bad("network"))?;
        let ports = |k: &str| -> std::result::Result<Vec<u16>, String> {
            v[k].as_array()
                .ok_or_else(|| bad(k))?
                .iter()
                .map(|p| p.as_u64().and_then(|p| u16::try_from(p).ok()))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad(k))
        };
        let missing = v["missing"]
            .as_array()
            .ok_or_else(|| bad("missing"))?
            .iter()
            .map(|n| {
                Need::ALL.into_iter().find(|m| n.as_str() == Some(m.name()))
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("missing"))?;
        let features = Features {
            landlock: v["landlock"]
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| bad("landlock"))?,
            userns: v["userns"].as_bool().ok_or_else(|| bad("userns"))?,
        };
        Ok(Decision {
            grants,
            network,
            connect: ports("connect")?,
            bind: ports("bind")?,
            missing,
            features,
        })
    }
}

/// A sandbox decided for one launch: built before the spawn, installed
/// into the command, and kept with the server (its private temporary
/// directory is removed when the plan is dropped).
#[derive(Debug)]
pub(crate) struct Plan {
    grants: Vec<Grant>,
    network: Network,
    connect: Vec<u16>,
    bind: Vec<u16>,
    tmp: PathBuf,
    /// Features the kernel lacks and `best_effort` let pass.
    not_enforced: Vec<&'static str>,
    #[cfg(target_os = "linux")]
    _ruleset: Option<kernel::Ruleset>,
    #[cfg(target_os = "linux")]
    steps: kernel::ChildSteps,
}

impl Plan {
    /// Decides the sandbox of server `name` started as `program` (resolved
    /// on `path_var`, the child's `PATH`) in `cwd`, with `roots` (the
    /// operator's `--root` directories of this run), with every check:
    /// refuses when a path does not exist or the kernel lacks what the
    /// block needs (warns, naming what is not enforced, with
    /// `best_effort`). Makes nothing: [`Plan::make`] does, in the process
    /// that spawns the server (this one, or the daemon for a warm one).
    pub(crate) fn decide(
        name: &str,
        spec: &Sandbox,
        program: &str,
        path_var: Option<&str>,
        cwd: Option<&Path>,
        roots: &[PathBuf],
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Decision> {
        let refuse = |m: String| Error::refused(format!("sandbox: {m}"));
        let features = features(lookup);
        let mut needs = vec![Need::Filesystem];
        if !spec.connect.is_empty() || !spec.bind.is_empty() {
            needs.push(Need::Ports);
        }
        needs.push(Need::Scoping);
        if spec.network != Network::Any {
            needs.push(Need::Namespaces);
        }
        let missing: Vec<Need> = needs
            .iter()
            .copied()
            .filter(|n| match n {
                Need::Namespaces => !features.userns,
                n => features.landlock < n.abi(),
            })
            .collect();
        if !missing.is_empty() && !spec.best_effort {
            let what: Vec<&str> =
                missing.iter().map(|n| n.describe()).collect();
            return Err(refuse(format!(
                "this kernel (Linux {}, Landlock ABI {}) lacks {}; the server \
                 is not started (\"best_effort\": true starts it with what \
                 the kernel enforces)",
                release(),
                features.landlock,
                what.join(" and ")
            )));
        }
        let mut grants = vec![];
        let mut add = |path: PathBuf, write: bool, why: &'static str| {
            if !grants
                .iter()
                .any(|g: &Grant| g.path == path && g.write == write)
            {
                grants.push(Grant { path, write, why });
            }
        };
        for p in SYSTEM_READ.iter().chain(SYSTEM_INFO).chain(DEVICES_READ) {
            if Path::new(p).exists() {
                add(p.into(), false, "system");
            }
        }
        for p in DEVICES_RW {
            if Path::new(p).exists() {
                add(p.into(), true, "device");
            }
        }
        for dir in program_dirs(program, path_var, cwd) {
            add(dir, false, "command");
        }
        let expand = |key: &str, i: usize, t: &str| -> Result<PathBuf> {
            let text = if t.contains("${") {
                crate::vars::expand(t, lookup)
                    .map_err(|e| refuse(format!("{key}[{i}]: {e}")))?
            } else {
                t.to_string()
            };
            let path = crate::config::sandbox_path(&text, &spec.base, lookup);
            if !path.exists() {
                return Err(refuse(format!(
                    "{key}[{i}]: '{}' does not exist",
                    path.display()
                )));
            }
            Ok(path)
        };
        for (i, t) in spec.read.iter().enumerate() {
            add(expand("read", i, t)?, false, "read");
        }
        for (i, t) in spec.write.iter().enumerate() {
            add(expand("write", i, t)?, true, "write");
        }
        if let Some(d) = cwd {
            add(d.to_path_buf(), false, "cwd");
        }
        for r in roots {
            add(r.clone(), true, "root");
        }
        if !missing.is_empty() {
            let what: Vec<&str> =
                missing.iter().map(|n| n.describe()).collect();
            crate::msg::warn(&format!(
                "server '{name}': sandbox: best effort: not enforced on this \
                 kernel (Linux {}): {}",
                release(),
                what.join("; ")
            ));
        }
        Ok(Decision {
            grants,
            network: spec.network,
            connect: spec.connect.clone(),
            bind: spec.bind.clone(),
            missing,
            features,
        })
    }

    /// Makes what `d` decided for server `name`: its private temporary
    /// directory (read-write) and the Landlock rule set with every rule
    /// added, ready for [`Plan::install`].
    pub(crate) fn make(name: &str, mut d: Decision) -> Result<Plan> {
        let refuse = |m: String| Error::refused(format!("sandbox: {m}"));
        let tmp = private_tmp(name).map_err(|e| {
            refuse(format!("private temporary directory: {e}"))
        })?;
        d.grants.push(Grant { path: tmp.clone(), write: true, why: "tmp" });
        Plan::build(d, tmp).map_err(|e| refuse(e.to_string()))
    }

    #[cfg(target_os = "linux")]
    fn build(d: Decision, tmp: PathBuf) -> std::io::Result<Plan> {
        use kernel::{SCOPE_ALL, fs, net};
        let f = d.features;
        let (grants, spec) = (&d.grants, &d);
        let ruleset = if f.landlock >= 1 {
            let all = kernel::fs_rights(f.landlock);
            let paths: Vec<(&Path, u64)> = grants
                .iter()
                .map(|g| {
                    (g.path.as_path(), if g.write { all } else { fs::READ })
                })
                .collect();
            let ports_on = f.landlock >= 4
                && (!spec.connect.is_empty() || !spec.bind.is_empty());
            let net_rights =
                if ports_on { net::BIND_TCP | net::CONNECT_TCP } else { 0 };
            let ports: Vec<(u16, u64)> = spec
                .connect
                .iter()
                .map(|p| (*p, net::CONNECT_TCP))
                .chain(spec.bind.iter().map(|p| (*p, net::BIND_TCP)))
                .collect();
            let scoped = if f.landlock >= 6 { SCOPE_ALL } else { 0 };
            Some(kernel::Ruleset::build(
                all, net_rights, scoped, &paths, &ports,
            )?)
        } else {
            None
        };
        let unshare = spec.network != Network::Any && f.userns;
        let steps = kernel::ChildSteps::new(
            unshare,
            spec.network == Network::Loopback,
            ruleset.as_ref().map_or(-1, kernel::Ruleset::raw),
        );
        Ok(Plan {
            not_enforced: d.missing.iter().map(|n| n.describe()).collect(),
            grants: d.grants,
            network: d.network,
            connect: d.connect,
            bind: d.bind,
            tmp,
            _ruleset: ruleset,
            steps,
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn build(_: Decision, tmp: PathBuf) -> std::io::Result<Plan> {
        let _ = std::fs::remove_dir(&tmp);
        Err(std::io::Error::other("the sandbox is supported on Linux only"))
    }

    /// Puts the plan into `cmd`: `TMPDIR` is the private directory, and
    /// the child confines itself before `exec`.
    pub(crate) fn install(&self, cmd: &mut std::process::Command) {
        cmd.env("TMPDIR", &self.tmp);
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            let steps = self.steps;
            // SAFETY (of the closure): system calls only, no allocation.
            #[allow(unsafe_code)]
            unsafe {
                cmd.pre_exec(move || steps.apply());
            }
        }
    }

    /// What the server is confined to, for the journal and `-v`.
    pub(crate) fn summary(&self) -> Value {
        summary(
            &self.grants,
            self.network,
            &self.connect,
            &self.bind,
            &self.not_enforced,
        )
    }
}

/// What a server is confined to, for the journal and `-v`: the paths
/// read-only and writable (each with why), the network, the ports, and
/// what the kernel does not enforce.
fn summary(
    grants: &[Grant],
    network: Network,
    connect: &[u16],
    bind: &[u16],
    not_enforced: &[&str],
) -> Value {
    let list = |write: bool| -> Vec<Value> {
        grants
            .iter()
            .filter(|g| g.write == write)
            .map(|g| json!({"path": g.path.display().to_string(), "why": g.why}))
            .collect()
    };
    json!({
        "read": list(false),
        "write": list(true),
        "network": network.name(),
        "connect": connect,
        "bind": bind,
        "not_enforced": not_enforced,
    })
}

impl Drop for Plan {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

/// The kernel's features, narrowed by [`PRETEND_VAR`].
fn features(lookup: &dyn Fn(&str) -> Option<String>) -> Features {
    #[cfg(target_os = "linux")]
    let mut f = Features {
        landlock: kernel::landlock_abi(),
        userns: kernel::user_namespaces_work(),
    };
    #[cfg(not(target_os = "linux"))]
    let mut f = Features { landlock: 0, userns: false };
    if let Some(v) = lookup(PRETEND_VAR) {
        for word in v.split_ascii_whitespace() {
            match word.split_once('=') {
                Some(("landlock", n)) => {
                    if let Ok(n) = n.parse::<u32>() {
                        f.landlock = f.landlock.min(n);
                    }
                }
                Some(("userns", "off")) => f.userns = false,
                _ => {}
            }
        }
    }
    f
}

fn release() -> String {
    #[cfg(target_os = "linux")]
    return kernel::kernel_release();
    #[cfg(not(target_os = "linux"))]
    return "unknown".into();
}

/// The directories a program needs to start: the one it is found in and,
/// when that is a `bin` directory, its parent (the installation prefix:
/// `lib/` beside `bin/`); the same for its resolved path when it is a
/// symbolic link.
fn program_dirs(
    program: &str,
    path_var: Option<&str>,
    cwd: Option<&Path>,
) -> Vec<PathBuf> {
    let found: Option<PathBuf> = if program.contains('/') {
        let p = PathBuf::from(program);
        Some(match (p.is_relative(), cwd) {
            (true, Some(d)) => d.join(p),
            _ => p,
        })
    } else {
        path_var.unwrap_or("").split(':').filter(|d| !d.is_empty()).find_map(
            |d| {
                let p = Path::new(d).join(program);
                p.is_file().then_some(p)
            },
        )
    };
    let mut out = vec![];
    let Some(found) = found else { return out };
    let canonical = std::fs::canonicalize(&found).ok();
    for p in std::iter::once(found).chain(canonical) {
        if let Some(dir) = p.parent() {
            if !out.iter().any(|d: &PathBuf| d == dir) {
                out.push(dir.to_path_buf());
            }
            if dir.file_name().is_some_and(|n| n == "bin")
                && let Some(prefix) = dir.parent()
                && prefix != Path::new("/")
                && !out.iter().any(|d: &PathBuf| d == prefix)
            {
                out.push(prefix.to_path_buf());
            }
        }
    }
    out
}

/// A new 0700 directory under the system's temporary directory.
fn private_tmp(name: &str) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let suffix: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let safe: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(32)
        .collect();
    let dir = std::env::temp_dir()
        .join(format!("rivumi-mcp-sandbox-{safe}-{suffix}"));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_in_a_bin_directory_brings_its_prefix() {
        let dirs = program_dirs("/usr/bin/env", None, None);
        assert!(dirs.contains(&PathBuf::from("/usr/bin")), "{dirs:?}");
        assert!(dirs.contains(&PathBuf::from("/usr")), "{dirs:?}");
        let on_path = program_dirs("env", Some("/nonexistent:/usr/bin"), None);
        assert_eq!(on_path.first(), Some(&PathBuf::from("/usr/bin")));
        assert!(
            program_dirs("no-such-program-x", Some("/usr/bin"), None)
                .is_empty()
        );
    }

    #[test]
    fn a_decision_goes_to_the_daemon_and_back_unchanged() {
        let d = Decision {
            grants: vec![
                Grant { path: "/usr".into(), write: false, why: "system" },
                Grant { path: "/tmp/x y".into(), write: true, why: "root" },
            ],
            network: Network::Loopback,
            connect: vec![443],
            bind: vec![8080],
            missing: vec![Need::Ports],
            features: Features { landlock: 3, userns: true },
        };
        assert_eq!(Decision::from_json(&d.to_json()).unwrap(), d);
        for (k, bad) in [
            ("grants", json!([["relative", true, "root"]])),
            ("grants", json!([["/x", true, "anything"]])),
            ("network", json!("everywhere")),
            ("connect", json!([70000])),
            ("missing", json!(["wings"])),
            ("landlock", json!(-1)),
        ] {
            let mut v = d.to_json();
            v[k] = bad;
            let e = Decision::from_json(&v).unwrap_err();
            assert!(e.contains("malformed sandbox"), "{k}: {e}");
        }
    }

    #[test]
    fn pretending_only_takes_features_away() {
        let real = features(&|_| None);
        let older = features(&|_| Some("landlock=3 userns=off".into()));
        assert_eq!(older.landlock, real.landlock.min(3));
        assert!(!older.userns);
        let newer = features(&|_| Some("landlock=99 userns=on".into()));
        assert_eq!(newer.landlock, real.landlock);
        assert_eq!(newer.userns, real.userns);
    }
}
