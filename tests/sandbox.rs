//! The opt-in kernel sandbox of stdio servers (Linux): a hostile server
//! (the fixture's `probe` tool) tries to read a planted secret, write
//! outside its paths, connect to a listening 127.0.0.1 port and raise its
//! privileges with a set-uid helper. Inside a sandbox every attempt is
//! denied; the same server unconfined succeeds at each, so each test can
//! fail; signals to processes outside it are denied (scoping). Also:
//! `bind` ports, the cwd and `--root` grants, paths with variables,
//! refusals on kernels that lack a feature (made to look older with
//! RIVUMI_MCP_SANDBOX_KERNEL), the fingerprint, `--no-sandbox`,
//! check-config and the journal.

#![cfg(target_os = "linux")]

use std::net::TcpListener;
use std::path::Path;

use serde_json::{Value, json};

use crate::util::{
    Dir, assert_contains, fixture_bin, fixture_server, run_allowed,
    write_mcp_json,
};

/// A project directory `proj` (holding `.mcp.json`) inside the test's
/// directory, with a secret and a writable directory beside it, outside
/// anything a sandbox grants.
struct Setup {
    dir: Dir,
    proj: Dir,
    secret: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn setup(test: &str, servers: &[(&str, Value)]) -> Setup {
    let dir = Dir::new(test);
    let secret = dir.write("secret.txt", "SECRET-42\n");
    let outside = dir.create_dir("outside");
    let proj = Dir::at(dir.create_dir("proj"));
    write_mcp_json(&proj, servers);
    Setup { dir, proj, secret, outside }
}

fn probe_server(sandbox: Option<Value>) -> Value {
    let mut s = fixture_server(&["--probe"]);
    if let Some(b) = sandbox {
        s["sandbox"] = b;
    }
    s
}

/// Calls `probe` on `server` with `args`; returns what each attempt gave.
fn probe(s: &Setup, allow: &str, server: &str, args: &[String]) -> Value {
    let tool = format!("mcp__{server}__probe");
    let mut argv: Vec<&str> = vec!["call", "--yes", &tool];
    argv.extend(args.iter().map(String::as_str));
    let out = run_allowed(&s.proj, allow, &argv).assert_exit(0);
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| {
        panic!("probe output is not JSON ({e}): {}", out.all())
    })
}

fn denied(v: &Value, what: &str) {
    assert!(v[what]["error"].is_string(), "{what} was not denied: {v}");
}

#[test]
fn a_hostile_server_is_denied_inside_and_succeeds_outside() {
    let s = setup(
        "sandbox_hostile",
        &[
            ("free", probe_server(None)),
            ("boxed", probe_server(Some(json!({"network": "none"})))),
            ("lo", probe_server(Some(json!({"network": "loopback"})))),
        ],
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let args = |name: &str| {
        vec![
            format!("read={}", s.secret.display()),
            format!("write={}", s.outside.join(name).display()),
            format!("connect=127.0.0.1:{port}"),
        ]
    };
    let free = probe(&s, "free,boxed,lo", "free", &args("free"));
    assert_eq!(free["read"]["ok"], "SECRET-42", "{free}");
    assert_eq!(free["write"]["ok"], "ok", "{free}");
    assert_eq!(free["connect"]["ok"], "ok", "{free}");
    assert!(s.outside.join("free").exists());

    for name in ["boxed", "lo"] {
        let boxed = probe(&s, "free,boxed,lo", name, &args(name));
        denied(&boxed, "read");
        denied(&boxed, "write");
        // "none" has no interface at all; "loopback" has its own `lo`,
        // where nothing listens: the host's 127.0.0.1 is out of reach.
        denied(&boxed, "connect");
        assert!(!s.outside.join(name).exists(), "{name} wrote outside");
        assert_absent_secret(&boxed);
    }
}

fn assert_absent_secret(v: &Value) {
    assert!(!v.to_string().contains("SECRET-42"), "the secret leaked: {v}");
}

#[test]
fn paths_named_in_the_block_are_granted_and_nothing_beside_them() {
    let s = setup(
        "sandbox_paths",
        &[(
            "boxed",
            probe_server(Some(json!({
                "read": ["../secret.txt"],
                "write": ["../outside"],
            }))),
        )],
    );
    let other = s.dir.write("other.txt", "OTHER\n");
    let v = probe(
        &s,
        "boxed",
        "boxed",
        &[
            format!("read={}", s.secret.display()),
            format!("write={}", s.outside.join("made").display()),
        ],
    );
    assert_eq!(v["read"]["ok"], "SECRET-42", "{v}");
    assert_eq!(v["write"]["ok"], "ok", "{v}");
    assert!(s.outside.join("made").exists());
    let v = probe(
        &s,
        "boxed",
        "boxed",
        &[
            format!("read={}", other.display()),
            format!("write={}", s.dir.path("beside").display()),
        ],
    );
    denied(&v, "read");
    denied(&v, "write");
}

#[test]
fn tcp_ports_narrow_the_network() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let other = if port == 65535 { port - 1 } else { port + 1 };
    let s = setup(
        "sandbox_ports",
        &[
            (
                "open",
                probe_server(Some(
                    json!({"network": "any", "connect": [port]}),
                )),
            ),
            (
                "shut",
                probe_server(Some(
                    json!({"network": "any", "connect": [other]}),
                )),
            ),
        ],
    );
    let arg = [format!("connect=127.0.0.1:{port}")];
    let open = probe(&s, "open,shut", "open", &arg);
    assert_eq!(open["connect"]["ok"], "ok", "{open}");
    let shut = probe(&s, "open,shut", "shut", &arg);
    denied(&shut, "connect");
}

/// Sandbox paths expand `${VAR}` and a leading `~/` (to `$HOME`) as other
/// fields do; with the variable unset the server does not start.
#[test]
fn sandbox_paths_expand_variables_and_home() {
    let s = setup(
        "sandbox_expand",
        &[(
            "boxed",
            probe_server(Some(json!({
                "read": ["${PROBE_DIR}/secret.txt"],
                "write": ["~/outside"],
            }))),
        )],
    );
    let base = s.secret.parent().unwrap().display().to_string();
    let read = format!("read={}", s.secret.display());
    let write = format!("write={}", s.outside.join("made").display());
    let argv = ["call", "--yes", "mcp__boxed__probe", &read, &write];
    let mut cmd = run_allowed(&s.proj, "boxed", &argv);
    cmd.env("PROBE_DIR", &base).env("HOME", &base);
    let out = cmd.assert_exit(0);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(v["read"]["ok"], "SECRET-42", "{v}");
    assert_eq!(v["write"]["ok"], "ok", "{v}");
    assert!(s.outside.join("made").exists());
    // Unset, the path cannot be known: refused before anything starts.
    let mut cmd = run_allowed(&s.proj, "boxed", &argv);
    cmd.env_remove("PROBE_DIR").env("HOME", &base);
    let out = cmd.assert_exit(3);
    assert_contains(&out.stderr, "PROBE_DIR");
}

/// Landlock scoping (ABI 6): a sandboxed server cannot signal a process
/// outside its sandbox (here `kill -0` of a `sleep` the test started, run
/// by a script the server executes); unconfined it can.
#[test]
fn signals_to_processes_outside_the_sandbox_are_denied() {
    let s = setup(
        "sandbox_signals",
        &[
            ("free", probe_server(None)),
            (
                "boxed",
                probe_server(Some(
                    json!({"network": "any", "read": ["../tools"]}),
                )),
            ),
        ],
    );
    let mut sleeper =
        std::process::Command::new("sleep").arg("30").spawn().unwrap();
    let tools = s.dir.create_dir("tools");
    let script = tools.join("signal.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nkill -0 {} && echo reachable\n", sleeper.id()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .unwrap();
    let args = [format!("exec={}", script.display())];
    let free = probe(&s, "free,boxed", "free", &args);
    let boxed = probe(&s, "free,boxed", "boxed", &args);
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(free["exec"]["ok"], "reachable", "{free}");
    let text = boxed["exec"]["ok"].as_str().unwrap_or_default();
    assert!(!text.contains("reachable"), "signalled outside: {boxed}");
    assert_contains(text, "not permitted");
}

/// `bind` lists the ports the server may listen on (Landlock ABI 4): one
/// listed is granted, any other denied, and no port may be connected to;
/// unconfined it may listen on any.
#[test]
fn bind_ports_narrow_what_the_server_may_listen_on() {
    let free_port = || {
        TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    };
    let yes = free_port();
    let no = std::iter::repeat_with(free_port).find(|&p| p != yes).unwrap();
    let s = setup(
        "sandbox_bind",
        &[
            ("free", probe_server(None)),
            (
                "boxed",
                probe_server(Some(json!({"network": "any", "bind": [yes]}))),
            ),
        ],
    );
    let arg = |p: u16| [format!("bind=127.0.0.1:{p}")];
    let free = probe(&s, "free,boxed", "free", &arg(no));
    assert_eq!(free["bind"]["ok"], "ok", "{free}");
    let boxed = probe(&s, "free,boxed", "boxed", &arg(yes));
    assert_eq!(boxed["bind"]["ok"], "ok", "{boxed}");
    let boxed = probe(&s, "free,boxed", "boxed", &arg(no));
    denied(&boxed, "bind");
    // With a port list every other TCP port is denied, to connect too.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = [format!("connect=127.0.0.1:{port}")];
    let free = probe(&s, "free,boxed", "free", &connect);
    assert_eq!(free["connect"]["ok"], "ok", "{free}");
    let boxed = probe(&s, "free,boxed", "boxed", &connect);
    denied(&boxed, "connect");
}

/// Besides its block a sandboxed server may read its `cwd` (not write
/// it), and read and write the `--root` directories the operator names
/// for that run; the next run without `--root` cannot reach them.
#[test]
fn the_cwd_and_roots_named_for_the_run_are_granted() {
    let s = setup("sandbox_roots", &[]);
    let work = s.dir.create_dir("work");
    std::fs::write(work.join("note.txt"), "NOTE-7\n").unwrap();
    let shared = s.dir.create_dir("shared");
    std::fs::write(shared.join("in.txt"), "SHARED-9\n").unwrap();
    let mut entry = probe_server(Some(json!({"network": "none"})));
    entry["cwd"] = json!("../work");
    write_mcp_json(&s.proj, &[("boxed", entry)]);
    let read_cwd = format!("read={}", work.join("note.txt").display());
    let write_cwd = format!("write={}", work.join("made").display());
    let v = probe(&s, "boxed", "boxed", &[read_cwd, write_cwd]);
    assert_eq!(v["read"]["ok"], "NOTE-7", "{v}");
    denied(&v, "write");
    assert!(!work.join("made").exists());

    let read = format!("read={}", shared.join("in.txt").display());
    let write = format!("write={}", shared.join("out").display());
    let root = shared.display().to_string();
    let argv =
        ["call", "--yes", "mcp__boxed__probe", &read, &write, "--root", &root];
    let out = run_allowed(&s.proj, "boxed", &argv).assert_exit(0);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(v["read"]["ok"], "SHARED-9", "{v}");
    assert_eq!(v["write"]["ok"], "ok", "{v}");
    assert!(shared.join("out").exists());
    std::fs::remove_file(shared.join("out")).unwrap();
    let v = probe(&s, "boxed", "boxed", &[read, write]);
    denied(&v, "read");
    denied(&v, "write");
    assert!(!shared.join("out").exists());
}

/// A set-uid-root copy of `id` in an allowed directory; the server drops
/// to uid 65534 and runs it: unconfined the helper's euid is 0, inside the
/// sandbox (no_new_privs) it is not.
#[test]
fn a_set_uid_helper_cannot_raise_privileges() {
    // SAFETY-free check: creating a set-uid-root file needs root, which CI
    // has (it runs as root); anywhere else this test says so and fails.
    let root = std::process::Command::new("id").arg("-u").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&root.stdout).trim(),
        "0",
        "this test creates a set-uid-root helper and needs root"
    );
    let s = setup(
        "sandbox_setuid",
        &[
            ("free", probe_server(None)),
            (
                "boxed",
                probe_server(Some(
                    json!({"network": "any", "read": ["../tools"]}),
                )),
            ),
        ],
    );
    let tools = s.dir.create_dir("tools");
    let helper = tools.join("suid-id");
    std::fs::copy("/usr/bin/id", &helper).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o4755))
        .unwrap();
    // The test directory must be reachable by uid 65534.
    let mut p = helper.clone();
    while let Some(parent) = p.parent() {
        let _ = std::fs::set_permissions(
            parent,
            std::fs::Permissions::from_mode(0o755),
        );
        if parent == Path::new("/") || parent == std::env::temp_dir() {
            break;
        }
        p = parent.to_path_buf();
    }
    let args =
        [format!("exec={}", helper.display()), "as_nobody=true".to_string()];
    let free = probe(&s, "free,boxed", "free", &args);
    let text = free["exec"]["ok"].as_str().unwrap_or_default().to_string();
    assert_contains(&text, "euid=0(");
    let boxed = probe(&s, "free,boxed", "boxed", &args);
    let text = boxed["exec"]["ok"].as_str().unwrap_or_default().to_string();
    assert!(text.contains("uid=65534"), "{boxed}");
    assert!(!text.contains("euid=0"), "the helper raised its euid: {boxed}");
}

#[test]
fn a_kernel_without_a_needed_feature_refuses_to_start() {
    let s = setup(
        "sandbox_old_kernel",
        &[
            (
                "ports",
                probe_server(Some(
                    json!({"network": "any", "connect": [443]}),
                )),
            ),
            ("plain", probe_server(Some(json!({"network": "none"})))),
            (
                "lenient",
                probe_server(Some(
                    json!({"network": "any", "connect": [443], "best_effort": true}),
                )),
            ),
        ],
    );
    let allow = "ports,plain,lenient";
    // Landlock ABI 3: no TCP rules, no scoping.
    let mut cmd =
        run_allowed(&s.proj, allow, &["call", "--yes", "mcp__ports__probe"]);
    cmd.env("RIVUMI_MCP_SANDBOX_KERNEL", "landlock=6");
    cmd.assert_exit(0);
    let mut cmd =
        run_allowed(&s.proj, allow, &["call", "--yes", "mcp__ports__probe"]);
    cmd.env("RIVUMI_MCP_SANDBOX_KERNEL", "landlock=3");
    let out = cmd.assert_exit(3);
    assert_contains(
        &out.stderr,
        "server 'ports': sandbox: this kernel (Linux ",
    );
    assert_contains(
        &out.stderr,
        "Landlock ABI 3) lacks Landlock TCP port rules",
    );
    assert_contains(&out.stderr, "best_effort");
    // No user namespaces: network "none" cannot be had.
    let mut cmd =
        run_allowed(&s.proj, allow, &["call", "--yes", "mcp__plain__probe"]);
    cmd.env("RIVUMI_MCP_SANDBOX_KERNEL", "userns=off");
    let out = cmd.assert_exit(3);
    assert_contains(&out.stderr, "unprivileged user and network namespaces");
    // best_effort starts it and says once what is not enforced.
    let mut cmd =
        run_allowed(&s.proj, allow, &["call", "--yes", "mcp__lenient__probe"]);
    cmd.env("RIVUMI_MCP_SANDBOX_KERNEL", "landlock=3");
    let out = cmd.assert_exit(0);
    assert_eq!(out.stderr.matches("not enforced").count(), 1, "{}", out.all());
    assert_contains(&out.stderr, "Landlock TCP port rules");
    // No Landlock at all.
    let mut cmd =
        run_allowed(&s.proj, allow, &["call", "--yes", "mcp__plain__probe"]);
    cmd.env("RIVUMI_MCP_SANDBOX_KERNEL", "landlock=0");
    let out = cmd.assert_exit(3);
    assert_contains(&out.stderr, "lacks Landlock filesystem rules");
}

fn fingerprint(proj: &Dir, name: &str) -> String {
    let out =
        run_allowed(proj, name, &["check-config", "--json"]).assert_exit(0);
    let v = out.stdout_json();
    v["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap()["fingerprint"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_loosened_sandbox_no_longer_matches_its_pin() {
    let dir = Dir::new("sandbox_fingerprint");
    let tight = probe_server(Some(json!({"network": "none"})));
    write_mcp_json(&dir, &[("boxed", tight.clone())]);
    let pinned = fingerprint(&dir, "boxed");
    for loose in [
        json!({"network": "any"}),
        json!({"network": "none", "write": ["."]}),
        json!({"network": "none", "best_effort": true}),
    ] {
        write_mcp_json(&dir, &[("boxed", probe_server(Some(loose.clone())))]);
        assert_ne!(fingerprint(&dir, "boxed"), pinned, "{loose}");
    }
    // No sandbox at all is a loosening too, and a pin refuses it.
    write_mcp_json(&dir, &[("boxed", probe_server(None))]);
    let allow = format!("boxed@{pinned}");
    let out =
        run_allowed(&dir, &allow, &["call", "--yes", "mcp__boxed__probe"])
            .assert_exit(3);
    assert_contains(&out.stderr, "cwd/sandbox");
    write_mcp_json(&dir, &[("boxed", tight)]);
    run_allowed(&dir, &allow, &["call", "--yes", "mcp__boxed__probe"])
        .assert_exit(0);
}

/// Calls `boxed`'s probe with `arg` and its sandbox lifted
/// (`--no-sandbox boxed`), then `extra`.
fn probe_lifted(s: &Setup, arg: &str, extra: &[&str]) -> crate::util::Output {
    let mut argv = vec![
        "call",
        "--yes",
        "mcp__boxed__probe",
        arg,
        "--no-sandbox",
        "boxed",
    ];
    argv.extend_from_slice(extra);
    run_allowed(&s.proj, "boxed", &argv).assert_exit(0)
}

#[test]
fn no_sandbox_lifts_it_for_one_run_and_is_journaled() {
    let s = setup(
        "sandbox_lifted",
        &[("boxed", probe_server(Some(json!({"network": "none"}))))],
    );
    let journal = s.dir.path("journal.jsonl");
    let read = format!("read={}", s.secret.display());
    let j = journal.display().to_string();
    let out = probe_lifted(&s, &read, &["--journal", &j]);
    assert_contains(&out.stdout, "SECRET-42");
    assert_contains(&out.stderr, "--no-sandbox");
    let text = std::fs::read_to_string(&journal).unwrap();
    let events: Vec<Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "sandbox_lifted" && e["server"] == "boxed"),
        "{text}"
    );
    // The next run is confined again, and the journal says how.
    std::fs::remove_file(&journal).unwrap();
    let out = run_allowed(
        &s.proj,
        "boxed",
        &["call", "--yes", "mcp__boxed__probe", &read, "--journal", &j],
    )
    .assert_exit(0);
    assert!(!out.stdout.contains("SECRET-42"), "{}", out.all());
    let text = std::fs::read_to_string(&journal).unwrap();
    let spawned: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "server_spawned")
        .unwrap();
    assert_eq!(spawned["sandbox"]["network"], "none", "{spawned}");
    let writable: Vec<&str> = spawned["sandbox"]["write"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["path"].as_str())
        .collect();
    assert!(
        writable.iter().any(|p| p.contains("rivumi-mcp-sandbox-boxed-")),
        "{spawned}"
    );
}

/// The `TMPDIR` server `boxed` of `s` runs with (its `env` tool).
fn server_tmpdir(s: &Setup) -> String {
    let out = run_allowed(
        &s.proj,
        "boxed",
        &["call", "--yes", "--json", "mcp__boxed__env"],
    )
    .assert_exit(0);
    let v = out.stdout_json();
    let env: Value =
        serde_json::from_str(v["content"][0]["text"].as_str().unwrap())
            .unwrap();
    env["TMPDIR"]
        .as_str()
        .unwrap_or_else(|| panic!("no TMPDIR in {env}"))
        .to_string()
}

/// A sandboxed server is kept warm by the daemon in the same sandbox: the
/// hostile probe is denied through the warm server as cold, one process
/// serves both calls (its private temporary directory stays while it is
/// warm and goes with it); a run that lifts the sandbox (`--no-sandbox`)
/// starts cold and unconfined and leaves no unconfined server behind, and
/// so does a run that grants a `--root` directory.
#[test]
fn a_sandboxed_server_is_kept_warm_in_its_sandbox() {
    let s = setup(
        "sandbox_warm",
        &[("boxed", probe_server(Some(json!({"network": "none"}))))],
    );
    let mut d = crate::daemon::Daemon::start(&s.proj, &[]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let args = [
        format!("read={}", s.secret.display()),
        format!("write={}", s.outside.join("warm").display()),
        format!("connect=127.0.0.1:{port}"),
    ];
    for _ in 0..2 {
        let v = probe(&s, "boxed", "boxed", &args);
        denied(&v, "read");
        denied(&v, "write");
        denied(&v, "connect");
        assert_absent_secret(&v);
    }
    assert!(!s.outside.join("warm").exists());
    let (first, second) = (server_tmpdir(&s), server_tmpdir(&s));
    assert_eq!(first, second, "one warm server");
    assert_contains(&first, "rivumi-mcp-sandbox-boxed-");
    assert!(Path::new(&first).is_dir(), "{first} is gone while warm");
    // -v and the journal of a warm call say what its server is confined
    // to.
    let journal = s.dir.path("warm.jsonl");
    let j = journal.display().to_string();
    let out = run_allowed(
        &s.proj,
        "boxed",
        &["-v", "call", "--yes", "mcp__boxed__env", "--journal", &j],
    )
    .assert_exit(0);
    assert_contains(&out.stderr, "warm from the daemon");
    assert_contains(&out.stderr, "server 'boxed': sandbox {");
    let text = std::fs::read_to_string(&journal).unwrap();
    let init: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "initialized")
        .unwrap();
    assert_eq!(init["warm"], true, "{init}");
    assert_eq!(init["sandbox"]["network"], "none", "{init}");
    let read: Vec<&str> = init["sandbox"]["read"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["path"].as_str())
        .collect();
    assert!(read.contains(&"/usr"), "{init}");
    assert!(!text.contains("server_spawned"), "the daemon spawned it");
    let warm = crate::daemon::servers(&s.proj);
    assert_eq!(warm.len(), 1, "{warm:?}");
    let read = format!("read={}", s.secret.display());
    let out = probe_lifted(&s, &read, &[]);
    assert_contains(&out.stdout, "SECRET-42");
    let after = crate::daemon::servers(&s.proj);
    assert_eq!(after.len(), 1, "a lifted sandbox is never warm: {after:?}");
    assert_eq!(after[0]["calls"], warm[0]["calls"], "the lifted run was cold");
    assert_eq!(after[0]["pid"], warm[0]["pid"]);
    // A run that grants a --root directory writes there, cold: a warm
    // server would keep the grant after the run.
    let shared = s.dir.create_dir("shared");
    let root = shared.display().to_string();
    let write = format!("write={}", shared.join("made").display());
    let out = run_allowed(
        &s.proj,
        "boxed",
        &["call", "--yes", "mcp__boxed__probe", &write, "--root", &root],
    )
    .assert_exit(0);
    assert!(shared.join("made").exists(), "{}", out.all());
    let after = crate::daemon::servers(&s.proj);
    assert_eq!(after.len(), 1, "a --root run is never warm: {after:?}");
    assert_eq!(after[0]["pid"], warm[0]["pid"]);
    run_allowed(&s.proj, "boxed", &["daemon", "stop"]).assert_exit(0);
    assert!(d.wait().success());
    assert!(!Path::new(&first).exists(), "{first} outlived the server");
}

#[test]
fn the_private_temporary_directory_is_the_servers_and_goes_with_it() {
    let s = setup(
        "sandbox_tmp",
        &[("boxed", probe_server(Some(json!({"network": "none"}))))],
    );
    let tmp = server_tmpdir(&s);
    assert_contains(&tmp, "rivumi-mcp-sandbox-boxed-");
    assert!(!Path::new(&tmp).exists(), "{tmp} outlived the server");
    let v = probe(&s, "boxed", "boxed", &[format!("write={tmp}/x")]);
    // That run's directory is another one: this one is gone for good.
    denied(&v, "write");
}

#[test]
fn check_config_shows_the_sandbox_and_warns_on_missing_paths() {
    let dir = Dir::new("sandbox_check_config");
    write_mcp_json(
        &dir,
        &[(
            "boxed",
            probe_server(Some(
                json!({"read": ["./nope"], "network": "loopback", "connect": [8080]}),
            )),
        )],
    );
    let out = run_allowed(&dir, "boxed", &["check-config"]).assert_exit(0);
    assert_contains(&out.stdout, "SANDBOXED");
    assert_contains(
        &out.stdout,
        "read ./nope; write -; network loopback; connect 8080; bind -",
    );
    assert_contains(&out.stdout, "nope' does not exist");
    let out =
        run_allowed(&dir, "boxed", &["check-config", "--json"]).assert_exit(0);
    let v = out.stdout_json();
    assert_eq!(v["servers"][0]["sandbox"]["network"], "loopback");
    assert_eq!(v["servers"][0]["sandbox"]["connect"], json!([8080]));
    // At launch a missing path refuses, naming it.
    let out =
        run_allowed(&dir, "boxed", &["call", "--yes", "mcp__boxed__probe"])
            .assert_exit(3);
    assert_contains(&out.stderr, "sandbox: read[0]:");
    assert_contains(&out.stderr, "does not exist");
    // Bad values are errors with their pointer.
    for (block, needle) in [
        (json!({"network": "internet"}), "/sandbox/network"),
        (json!({"connect": [0]}), "/sandbox/connect/0"),
        (json!({"reed": []}), "did you mean 'read'"),
        (json!(["."]), "'sandbox' must be an object"),
    ] {
        write_mcp_json(&dir, &[("boxed", probe_server(Some(block)))]);
        let out = run_allowed(&dir, "boxed", &["check-config"]).assert_exit(1);
        assert_contains(&out.all(), needle);
    }
}

/// The fixture server runs from its own directory (target/debug), which a
/// sandbox grants: it is "the command's own directory".
#[test]
fn the_command_needs_nothing_else_to_start() {
    let s =
        setup("sandbox_starts", &[("boxed", probe_server(Some(json!({}))))]);
    assert!(
        fixture_bin().starts_with(crate::util::repo_root())
            || fixture_bin().is_absolute()
    );
    let out = run_allowed(
        &s.proj,
        "boxed",
        &["call", "--yes", "mcp__boxed__echo", "text=hi"],
    )
    .assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
}

const FS_JS: &str = ".interop/sandbox-node/node_modules/@modelcontextprotocol/\
                     server-filesystem/dist/index.js";
const FETCH_PYTHON: &str = ".interop/real-fetch-venv/bin/python";

/// server-filesystem 2026.8.31 (node) confined to its package (read) and
/// one data directory (write): it reads and writes there, and nowhere
/// else, even when asked to.
#[test]
fn interop_sandbox_filesystem() {
    let root = crate::util::repo_root();
    let Some(node) = crate::util::interop::node_and(
        "interop_sandbox_filesystem",
        &[root.join(FS_JS)],
    ) else {
        return;
    };
    let dir = Dir::new("interop_sandbox_filesystem");
    let data = dir.create_dir("data");
    dir.write("data/a.txt", "hello from data\n");
    let package = root.join(".interop/sandbox-node");
    let proj = Dir::at(dir.create_dir("proj"));
    write_mcp_json(
        &proj,
        &[(
            "fs",
            json!({
                "command": node.to_str().unwrap(),
                "args": [root.join(FS_JS).to_str().unwrap(), data.to_str().unwrap(), dir.root().to_str().unwrap()],
                "sandbox": {"read": [package.to_str().unwrap()], "write": [data.to_str().unwrap()]},
            }),
        )],
    );
    let a = format!("path={}", data.join("a.txt").display());
    let out = run_allowed(
        &proj,
        "fs",
        &["call", "--yes", "mcp__fs__read_text_file", &a],
    )
    .assert_exit(0);
    assert_contains(&out.stdout, "hello from data");
    let b = format!("path={}", data.join("b.txt").display());
    run_allowed(
        &proj,
        "fs",
        &["call", "--yes", "mcp__fs__write_file", &b, "content=made inside"],
    )
    .assert_exit(0);
    assert_eq!(
        std::fs::read_to_string(data.join("b.txt")).unwrap(),
        "made inside"
    );
    // The server was given the whole test directory as an allowed root;
    // the sandbox still keeps it to `data`.
    let secret = dir.write("secret.txt", "SECRET-42\n");
    let s = format!("path={}", secret.display());
    let out = run_allowed(
        &proj,
        "fs",
        &["call", "--yes", "mcp__fs__read_text_file", &s],
    )
    .run();
    assert!(!out.stdout.contains("SECRET-42"), "{}", out.all());
    let c = format!("path={}", dir.path("c.txt").display());
    run_allowed(
        &proj,
        "fs",
        &["call", "--yes", "mcp__fs__write_file", &c, "content=x"],
    )
    .run();
    assert!(!dir.path("c.txt").exists(), "wrote outside its sandbox");
}

/// A one-request HTTP server on 127.0.0.1 that answers any GET with a page.
fn page_server() -> (u16, std::thread::JoinHandle<()>) {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let t = std::thread::spawn(move || {
        let end =
            std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::time::Instant::now() < end {
            match listener.accept() {
                Ok((mut s, _)) => {
                    s.set_nonblocking(false).unwrap();
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf);
                    let body =
                        "<html><body><p>sandbox page 77</p></body></html>";
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    return;
                }
                Err(_) => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
            }
        }
    });
    (port, t)
}

/// mcp-server-fetch 2026.10.24 (Python) fetches a page on 127.0.0.1 with
/// `network: any` and cannot with `network: none`.
#[test]
fn interop_sandbox_fetch_network() {
    let root = crate::util::repo_root();
    let python = root.join(FETCH_PYTHON);
    if crate::util::interop::node_and(
        "interop_sandbox_fetch_network",
        std::slice::from_ref(&python),
    )
    .is_none()
    {
        return;
    }
    let server = |network: &str| {
        json!({
            "command": python.to_str().unwrap(),
            "args": ["-m", "mcp_server_fetch", "--ignore-robots-txt", "--allow-private-ips"],
            // Without node on PATH: readabilipy would otherwise run `npm
            // install` into its own (read-only) package on first use.
            "env": {"PATH": python.parent().unwrap().to_str().unwrap()},
            "sandbox": {"network": network},
        })
    };
    let dir = Dir::new("interop_sandbox_fetch");
    write_mcp_json(&dir, &[("open", server("any")), ("shut", server("none"))]);
    let (port, t) = page_server();
    let url = format!("url=http://127.0.0.1:{port}/");
    let out = run_allowed(
        &dir,
        "open,shut",
        &["call", "--yes", "mcp__open__fetch", &url],
    )
    .assert_exit(0);
    assert_contains(&out.stdout, "sandbox page 77");
    t.join().unwrap();
    let (port, _t) = page_server();
    let url = format!("url=http://127.0.0.1:{port}/");
    let out = run_allowed(
        &dir,
        "open,shut",
        &["call", "--yes", "mcp__shut__fetch", &url],
    )
    .assert_exit(1);
    assert!(!out.stdout.contains("sandbox page 77"), "{}", out.all());
    assert_contains(&out.all(), "Failed to fetch");
}
