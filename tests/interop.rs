//! Interop with real MCP servers over stdio: the TypeScript reference
//! server `@modelcontextprotocol/server-everything` and a server built on
//! the official Python SDK (`fixtures/interop/py_server.py`).
//!
//! Both live in `.interop/`, installed by `scripts/interop-setup.sh` (which
//! `make test` runs); fixtures/interop/README.md lists what they answer.
//! A test whose servers are missing fails and says how to install them,
//! unless `RIVUMI_MCP_SKIP_INTEROP=1` is set: then it says so on stderr and
//! passes.
//!
//! Every command is timed (the times are printed on stderr; see them with
//! `cargo test --test integration interop -- --nocapture`) and must finish
//! in under [`LIMIT`], shutdown included. Each test gives its servers a
//! unique marker argument, and after every command no process whose
//! command line carries that marker may be left running.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::util::{Dir, Output, assert_contains, repo_root};

/// Set to `1` to let these tests pass when `.interop/` is not installed.
const SKIP_VAR: &str = "RIVUMI_MCP_SKIP_INTEROP";

/// The longest any one command may take, start-up and shutdown included.
/// A `list` takes about 0.6 s here; both servers exit within about 0.4 s
/// of stdin EOF (fixtures/interop/README.md).
const LIMIT: Duration = Duration::from_secs(5);

/// How long a server process may outlive the command that started it.
const LEFTOVER_GRACE: Duration = Duration::from_secs(1);

/// Held by each interop test for its whole run: on a small machine, seven
/// tests starting Node and Python at once take 3 s a command, which would
/// make [`LIMIT`] measure the load rather than `rivumi-mcp`.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const EVERYTHING_JS: &str = ".interop/node/node_modules/\
                             @modelcontextprotocol/server-everything/dist/\
                             index.js";
const VENV_PYTHON: &str = ".interop/venv/bin/python";
const PY_SERVER: &str = "fixtures/interop/py_server.py";

/// server-everything's tools (client capabilities `{}`), in its order,
/// with the classification its annotations give: `read` for
/// `readOnlyHint: true, destructiveHint: false`.
const EVERYTHING_TOOLS: &[(&str, &str)] = &[
    ("echo", "read"),
    ("get-annotated-message", "read"),
    ("get-env", "read"),
    ("get-resource-links", "read"),
    ("get-resource-reference", "read"),
    ("get-structured-content", "read"),
    ("get-sum", "read"),
    ("get-tiny-image", "read"),
    ("gzip-file-as-resource", "execute"),
    ("toggle-simulated-logging", "execute"),
    ("toggle-subscriber-updates", "execute"),
    ("trigger-long-running-operation", "read"),
    ("simulate-research-query", "execute"),
];

/// `py_server.py`'s tools, served 2 per `tools/list` page.
const PY_TOOLS: &[(&str, &str)] = &[
    ("echo", "read"),
    ("add", "read"),
    ("greet", "execute"),
    ("get_weather", "execute"),
    ("sleep_ms", "read"),
    ("fail", "execute"),
    // readOnlyHint false, destructiveHint true.
    ("reset_counter", "execute"),
];

/// Where the installed servers are.
#[derive(Debug, Clone)]
struct Servers {
    node: PathBuf,
    everything_js: PathBuf,
    python: PathBuf,
    py_server: PathBuf,
}

/// The first executable `name` on the test process's PATH (`which`).
fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// The servers, or `None` (after a line on stderr) when they are missing
/// and [`SKIP_VAR`] is `1`. Panics when they are missing otherwise.
fn servers(test: &str) -> Option<Servers> {
    let root = repo_root();
    let everything_js = root.join(EVERYTHING_JS);
    let python = root.join(VENV_PYTHON);
    let py_server = root.join(PY_SERVER);
    let node = which("node");
    let mut missing = vec![];
    if node.is_none() {
        missing.push("node (not on PATH)".to_string());
    }
    for p in [&everything_js, &python, &py_server] {
        if !p.is_file() {
            missing.push(p.display().to_string());
        }
    }
    if missing.is_empty() {
        let node = node.expect("checked above");
        return Some(Servers { node, everything_js, python, py_server });
    }
    let missing = missing.join(", ");
    if std::env::var_os(SKIP_VAR).is_some_and(|v| v == "1") {
        eprintln!(
            "{test}: SKIPPED ({SKIP_VAR}=1): interop servers missing: \
             {missing}"
        );
        return None;
    }
    panic!(
        "{test}: the interop servers are not installed (missing: \
         {missing}).\nRun scripts/interop-setup.sh (or make test) first; \
         set {SKIP_VAR}=1 to skip the interop tests."
    );
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    /// `everything`: server-everything over stdio.
    Everything,
    /// `py`: `py_server.py` over stdio.
    Py,
}

impl Server {
    fn name(self) -> &'static str {
        match self {
            Server::Everything => "everything",
            Server::Py => "py",
        }
    }
}

/// One test's directory, with a `.mcp.json` naming its servers.
struct Interop {
    test: String,
    dir: Dir,
    marker: String,
    _turn: MutexGuard<'static, ()>,
}

impl Interop {
    /// `None` when the test is to be skipped (see [`servers`]).
    fn new(test: &str, entries: &[Server]) -> Option<Interop> {
        let s = servers(test)?;
        // A test that panicked let go of the lock; that is fine here.
        let turn = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = Dir::new(test);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let marker = format!(
            "rivumi-interop-marker-{test}-{}-{nanos}",
            std::process::id()
        );
        // Written by hand: serde_json's Map would sort the servers, and
        // their order in the file is what `list` follows.
        let mut members = vec![];
        for e in entries {
            let entry = match e {
                // Arguments after the transport name are ignored.
                Server::Everything => json!({
                    "command": s.node,
                    "args": [s.everything_js, "stdio", marker],
                }),
                // CPython accepts (and ignores) any -X name=value.
                Server::Py => json!({
                    "command": s.python,
                    "args": ["-X", format!("{marker}=1"), s.py_server],
                }),
            };
            members.push(format!("    {:?}: {entry}", e.name()));
        }
        let config =
            format!("{{\"mcpServers\": {{\n{}\n}}}}\n", members.join(",\n"));
        dir.write(".mcp.json", config);
        Some(Interop { test: test.to_string(), dir, marker, _turn: turn })
    }

    /// Runs `rivumi-mcp ARGS` with `allow` as the allowlist and checks the
    /// exit code, the time taken and that no server process is left.
    #[track_caller]
    fn run(&self, allow: &str, args: &[&str], code: i32) -> Output {
        let mut cmd = self.dir.command(args);
        cmd.env("RIVUMI_MCP_ALLOWLIST", allow).timeout(LIMIT * 4);
        let start = Instant::now();
        let out = cmd.run();
        let took = start.elapsed();
        eprintln!(
            "interop timing: {}: rivumi-mcp {}: {} ms",
            self.test,
            args.join(" "),
            took.as_millis()
        );
        if out.code != Some(code) {
            panic!(
                "expected exit code {code}, got {:?}\n{}",
                out.status,
                cmd.report(&out)
            );
        }
        assert!(
            took < LIMIT,
            "took {took:?} (limit {LIMIT:?}): shutdown too slow?\n{}",
            cmd.report(&out)
        );
        self.assert_no_leftovers(&cmd.describe());
        out
    }

    /// No process carrying this test's marker is alive, allowing
    /// [`LEFTOVER_GRACE`] for it to go. Leftovers are killed (they were
    /// started by this test) and fail the test.
    #[track_caller]
    fn assert_no_leftovers(&self, what: &str) {
        if !Path::new("/proc/self/cmdline").exists() {
            return; // Not Linux: nothing to scan.
        }
        let start = Instant::now();
        let mut left = processes_with(&self.marker);
        while !left.is_empty() && start.elapsed() < LEFTOVER_GRACE {
            std::thread::sleep(Duration::from_millis(20));
            left = processes_with(&self.marker);
        }
        if left.is_empty() {
            return;
        }
        for (pid, _) in &left {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        let list: Vec<String> =
            left.iter().map(|(pid, cmd)| format!("  {pid}: {cmd}")).collect();
        panic!(
            "server processes still alive {LEFTOVER_GRACE:?} after \
             rivumi-mcp exited (now killed):\n{}\n{what}",
            list.join("\n")
        );
    }
}

/// Live processes whose command line contains `marker`: (pid, cmdline).
/// Zombies have an empty cmdline, so they do not count.
fn processes_with(marker: &str) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return vec![] };
    let mut found = vec![];
    for e in entries.flatten() {
        let Some(pid) =
            e.file_name().to_str().and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push((pid, cmdline.trim_end().to_string()));
        }
    }
    found
}

/// The `  mcp__<server>__<tool>  <class>  ...` rows of a human `list`,
/// for one server's section.
fn tool_rows(stdout: &str, server: &str) -> Vec<(String, String)> {
    let prefix = format!("mcp__{server}__");
    stdout
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let name = words.next()?;
            let class = words.next()?;
            name.starts_with(&prefix).then(|| (name.into(), class.into()))
        })
        .collect()
}

/// The expected rows for `tools` of `server`.
fn expected_rows(
    server: &str,
    tools: &[(&str, &str)],
) -> Vec<(String, String)> {
    tools
        .iter()
        .map(|(t, c)| (format!("mcp__{server}__{t}"), c.to_string()))
        .collect()
}

/// The classification the annotations of a tool definition call for.
fn class_of(def: &Value) -> &'static str {
    let a = &def["annotations"];
    let ro = a["readOnlyHint"] == json!(true);
    let destructive = a["destructiveHint"] == json!(true);
    if ro && !destructive { "read" } else { "execute" }
}

/// Checks one server's entry in `list --json` against its expected tools.
#[track_caller]
fn check_json_listing(
    s: &Value,
    server: &str,
    server_name: &str,
    tools: &[(&str, &str)],
) {
    assert_eq!(s["server"], json!(server), "{s:#}");
    assert_eq!(s["ok"], json!(true), "{s:#}");
    assert_eq!(s["complete"], json!(true), "{s:#}");
    assert_eq!(s["protocol"], json!("2025-11-25"), "{s:#}");
    assert_eq!(s["serverInfo"]["name"], json!(server_name), "{s:#}");
    let items = s["tools"].as_array().expect("a tools array");
    let got: Vec<(&str, &str)> = items
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or("?"),
                t["classification"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    assert_eq!(got, tools, "tools of {server}");
    for t in items {
        let name = t["name"].as_str().unwrap_or("?");
        assert_eq!(
            t["qualified_name"],
            json!(format!("mcp__{server}__{name}")),
            "{t:#}"
        );
        assert_eq!(t["server"], json!(server), "{t:#}");
        assert_eq!(t["classification"], json!(class_of(t)), "{t:#}");
        assert!(t["inputSchema"].is_object(), "{t:#}");
    }
}

fn lines_with<'a>(stdout: &'a str, start: &str) -> Vec<&'a str> {
    stdout.lines().filter(|l| l.trim_start().starts_with(start)).collect()
}

fn first_word_after<'a>(line: &'a str, start: &str) -> &'a str {
    let rest = line.trim_start().strip_prefix(start).unwrap_or("");
    rest.split_whitespace().next().unwrap_or("")
}

// ---- server-everything --------------------------------------------------

#[test]
fn interop_everything_list() {
    let Some(t) =
        Interop::new("interop_everything_list", &[Server::Everything])
    else {
        return;
    };
    let out = t.run("everything", &["list"], 0);
    let mut lines = out.stdout.lines();
    assert_eq!(
        lines.next(),
        Some("everything: mcp-servers/everything 2.0.0 (protocol 2025-11-25)"),
        "{}",
        out.stdout
    );
    assert_eq!(
        tool_rows(&out.stdout, "everything"),
        expected_rows("everything", EVERYTHING_TOOLS),
        "{}",
        out.stdout
    );
    assert_contains(&out.stdout, "  mcp__everything__echo ");
    assert_contains(&out.stdout, "Echoes back the input string");
    assert_contains(&out.stdout, "  mcp__everything__get-sum ");
    assert_eq!(out.stderr, "", "nothing on stderr");

    let out = t.run("everything", &["list", "everything", "--json"], 0);
    let v = out.stdout_json();
    let servers = v["servers"].as_array().expect("servers array");
    assert_eq!(servers.len(), 1, "{v:#}");
    check_json_listing(
        &servers[0],
        "everything",
        "mcp-servers/everything",
        EVERYTHING_TOOLS,
    );
    let echo = &servers[0]["tools"][0];
    assert_eq!(echo["annotations"]["readOnlyHint"], json!(true), "{echo:#}");
    let sum = &servers[0]["tools"][6];
    assert_eq!(sum["name"], json!("get-sum"));
    assert_eq!(sum["inputSchema"]["properties"]["a"]["type"], json!("number"));
}

#[test]
fn interop_everything_call() {
    let Some(t) =
        Interop::new("interop_everything_call", &[Server::Everything])
    else {
        return;
    };
    let allow = "everything";
    let out =
        t.run(allow, &["call", "mcp__everything__echo", "message=hi"], 0);
    assert_eq!(out.stdout, "Echo: hi\n");
    assert_eq!(out.stderr, "");

    // A string property stays a string, even when it looks like a number
    // (the server's zod schema would refuse a number).
    let out = t.run(allow, &["call", "everything", "echo", "message=007"], 0);
    assert_eq!(out.stdout, "Echo: 007\n");

    // a and b are `number` in the schema: coerced from "2" and "3", or the
    // server would answer with an isError validation failure.
    let out =
        t.run(allow, &["call", "everything", "get-sum", "a=2", "b=3"], 0);
    assert_eq!(out.stdout, "The sum of 2 and 3 is 5.\n");
    let out = t.run(
        allow,
        &["call", "everything", "get-sum", "a=2", "b=3", "--json"],
        0,
    );
    let v = out.stdout_json();
    assert_eq!(v["content"][0]["text"], json!("The sum of 2 and 3 is 5."));
    assert_eq!(v.get("isError"), None, "{v:#}");
    let out =
        t.run(allow, &["call", "everything", "get-sum", "a:=1.5", "b=2"], 0);
    assert_eq!(out.stdout, "The sum of 1.5 and 2 is 3.5.\n");

    // A raw JSON string for a number: the server says isError -> exit 1,
    // with its text on stdout.
    let out =
        t.run(allow, &["call", "everything", "get-sum", "a:=\"x\"", "b=1"], 1);
    assert_eq!(
        out.stdout,
        "MCP error -32602: Input validation error: Invalid arguments for \
         tool get-sum: Invalid input: expected number, received string at \
         a\n"
    );
    assert_contains(&out.stderr, "reported an error (isError)");
    let out = t.run(
        allow,
        &["call", "everything", "get-sum", "a:=\"x\"", "b=1", "--json"],
        1,
    );
    assert_eq!(out.stdout_json()["isError"], json!(true));

    // A value that cannot be a number is refused before the call: usage.
    let out =
        t.run(allow, &["call", "everything", "get-sum", "a=2", "b=x"], 2);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "'x' is not a number");

    // An unknown tool is found out from tools/list: usage, with a hint.
    let out = t.run(allow, &["call", "mcp__everything__get-summ"], 2);
    assert_contains(
        &out.stderr,
        "no tool 'get-summ'; did you mean 'get-sum'?",
    );
}

#[test]
fn interop_everything_resources_and_prompts() {
    let Some(t) = Interop::new(
        "interop_everything_resources_and_prompts",
        &[Server::Everything],
    ) else {
        return;
    };
    let allow = "everything";
    let out = t.run(allow, &["resources", "everything"], 0);
    let docs = [
        "architecture",
        "extension",
        "features",
        "how-it-works",
        "instructions",
        "startup",
        "structure",
    ];
    let resources: Vec<&str> = lines_with(&out.stdout, "resource ")
        .into_iter()
        .map(|l| first_word_after(l, "resource "))
        .collect();
    let want: Vec<String> = docs
        .iter()
        .map(|d| format!("demo://resource/static/document/{d}.md"))
        .collect();
    assert_eq!(resources, want, "{}", out.stdout);
    for l in lines_with(&out.stdout, "resource ") {
        assert_contains(l, "  text/markdown  ");
    }
    let templates: Vec<&str> = lines_with(&out.stdout, "template ")
        .into_iter()
        .map(|l| first_word_after(l, "template "))
        .collect();
    assert_eq!(
        templates,
        [
            "demo://resource/dynamic/text/{resourceId}",
            "demo://resource/dynamic/blob/{resourceId}"
        ],
        "{}",
        out.stdout
    );

    let out = t.run(allow, &["resources", "everything", "--json"], 0);
    let v = out.stdout_json();
    let s = &v["servers"][0];
    assert_eq!(s["complete"], json!(true), "{v:#}");
    assert_eq!(s["resources"].as_array().map(Vec::len), Some(7), "{v:#}");
    assert_eq!(
        s["resourceTemplates"].as_array().map(Vec::len),
        Some(2),
        "{v:#}"
    );

    let out = t.run(
        allow,
        &["read", "everything", "demo://resource/dynamic/text/1"],
        0,
    );
    // The rest of the text is the current time.
    assert!(
        out.stdout.starts_with(
            "Resource 1: This is a plaintext resource created at "
        ),
        "{}",
        out.stdout
    );
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    let out = t.run(
        allow,
        &["read", "everything", "demo://resource/static/document/features.md"],
        0,
    );
    assert!(out.stdout.starts_with("# Everything Server"), "{}", out.stdout);
    let out = t.run(
        allow,
        &["read", "everything", "demo://resource/dynamic/text/1", "--json"],
        0,
    );
    let v = out.stdout_json();
    assert_eq!(
        v["contents"][0]["uri"],
        json!("demo://resource/dynamic/text/1")
    );
    // An unknown URI is a JSON-RPC error: exit 4.
    let out = t.run(allow, &["read", "everything", "demo://nope"], 4);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "Resource demo://nope not found");

    let out = t.run(allow, &["prompts", "everything"], 0);
    let prompts: Vec<&str> = lines_with(&out.stdout, "prompt ")
        .into_iter()
        .map(|l| first_word_after(l, "prompt "))
        .collect();
    assert_eq!(
        prompts,
        [
            "simple-prompt",
            "args-prompt",
            "completable-prompt",
            "resource-prompt"
        ],
        "{}",
        out.stdout
    );
    let args_line = lines_with(&out.stdout, "prompt args-prompt ");
    assert_eq!(args_line.len(), 1, "{}", out.stdout);
    assert_contains(args_line[0], " city [state] ");

    let out = t.run(
        allow,
        &["prompt", "everything", "args-prompt", "city=Paris"],
        0,
    );
    assert_eq!(out.stdout, "[user]\nWhat's weather in Paris?\n");
    let out = t.run(
        allow,
        &["prompt", "everything", "args-prompt", "city=Paris", "--json"],
        0,
    );
    let v = out.stdout_json();
    assert_eq!(v["messages"][0]["role"], json!("user"), "{v:#}");
    assert_eq!(
        v["messages"][0]["content"]["text"],
        json!("What's weather in Paris?"),
        "{v:#}"
    );
    // The required argument missing: the server's JSON-RPC error, exit 4.
    let out = t.run(allow, &["prompt", "everything", "args-prompt"], 4);
    assert_contains(&out.stderr, "Invalid arguments for prompt args-prompt");
}

// ---- py_server.py (Python SDK) --------------------------------------------

#[test]
fn interop_py_list_paged() {
    let Some(t) = Interop::new("interop_py_list_paged", &[Server::Py]) else {
        return;
    };
    // tools/list comes in 4 pages of 2, 2, 2 and 1 tools.
    let out = t.run("py", &["list"], 0);
    assert_eq!(
        out.stdout.lines().next(),
        Some("py: rivumi-interop-py 1.0.0 (protocol 2025-11-25)"),
        "{}",
        out.stdout
    );
    assert_eq!(
        tool_rows(&out.stdout, "py"),
        expected_rows("py", PY_TOOLS),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("incomplete"), "{}", out.stdout);
    assert_eq!(out.stderr, "", "nothing on stderr");

    let out = t.run("py", &["list", "py", "--json"], 0);
    let v = out.stdout_json();
    let servers = v["servers"].as_array().expect("servers array");
    assert_eq!(servers.len(), 1, "{v:#}");
    check_json_listing(&servers[0], "py", "rivumi-interop-py", PY_TOOLS);

    // --all: resources and prompts (not paginated) with the tools.
    let out = t.run("py", &["list", "py", "--all", "--json"], 0);
    let v = out.stdout_json();
    let s = &v["servers"][0];
    assert_eq!(s["complete"], json!(true), "{v:#}");
    assert_eq!(s["tools"].as_array().map(Vec::len), Some(7), "{v:#}");
    assert_eq!(s["resources"].as_array().map(Vec::len), Some(2), "{v:#}");
    assert_eq!(
        s["resourceTemplates"].as_array().map(Vec::len),
        Some(1),
        "{v:#}"
    );
    assert_eq!(s["prompts"].as_array().map(Vec::len), Some(1), "{v:#}");
}

#[test]
fn interop_py_call() {
    let Some(t) = Interop::new("interop_py_call", &[Server::Py]) else {
        return;
    };
    let allow = "py";
    // A readOnly tool.
    let out = t.run(allow, &["call", "mcp__py__echo", "message=hi"], 0);
    assert_eq!(out.stdout, "Echo: hi\n");
    assert_eq!(out.stderr, "");
    let out = t.run(allow, &["call", "py", "echo", "message=hi", "--json"], 0);
    let v = out.stdout_json();
    assert_eq!(v["content"][0]["text"], json!("Echo: hi"), "{v:#}");
    assert_eq!(v["isError"], json!(false), "{v:#}");

    // Number parameters (the tool, found on page 1 of 4).
    let out = t.run(allow, &["call", "py", "add", "a=2", "b=3.5"], 0);
    assert_eq!(out.stdout, "2 + 3.5 = 5.5\n");
    let out = t.run(allow, &["call", "mcp__py__add", "a=2", "b=3"], 0);
    assert_eq!(out.stdout, "2 + 3 = 5\n");
    // An integer parameter of a tool on page 3.
    let out = t.run(allow, &["call", "py", "sleep_ms", "ms=300"], 0);
    assert_eq!(out.stdout, "slept 300 ms\n");
    // A string stays a string (pydantic would refuse a number for it) and
    // a boolean is converted; greet is classified execute, hence -y.
    let out = t.run(
        allow,
        &["call", "py", "greet", "name=007", "excited=true", "-y"],
        0,
    );
    assert_eq!(out.stdout, "Hello, 007!\n");
    let out = t.run(allow, &["call", "py", "greet", "name=Ada", "-y"], 0);
    assert_eq!(out.stdout, "Hello, Ada.\n");
    // structuredContent.
    let out = t.run(
        allow,
        &["call", "py", "get_weather", "city=Oslo", "-y", "--json"],
        0,
    );
    let v = out.stdout_json();
    assert_eq!(
        v["structuredContent"],
        json!({"city": "Oslo", "temperature": 21.5, "conditions": "sunny"}),
        "{v:#}"
    );

    // The error tool: isError -> exit 1, its text on stdout.
    let out = t.run(allow, &["call", "py", "fail", "reason=nope", "-y"], 1);
    assert_eq!(out.stdout, "Error executing tool fail: nope\n");
    assert_contains(&out.stderr, "tool 'fail' reported an error (isError)");
    let out = t.run(allow, &["call", "mcp__py__fail", "-y", "--json"], 1);
    let v = out.stdout_json();
    assert_eq!(v["isError"], json!(true), "{v:#}");
    assert_eq!(
        v["content"][0]["text"],
        json!("Error executing tool fail: boom")
    );
    // Bad arguments: the server's validation error is an isError result.
    let out = t.run(allow, &["call", "py", "add", "a:=\"x\"", "b=1"], 1);
    assert!(
        out.stdout.starts_with(
            "Error executing tool add: 1 validation error for addArguments"
        ),
        "{}",
        out.stdout
    );
    // Refused locally: a missing required argument.
    let out = t.run(allow, &["call", "py", "add", "a=1"], 2);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "missing b");
}

#[test]
fn interop_py_resources_and_prompts() {
    let Some(t) =
        Interop::new("interop_py_resources_and_prompts", &[Server::Py])
    else {
        return;
    };
    let allow = "py";
    let out = t.run(allow, &["resources", "py"], 0);
    let resources: Vec<(&str, &str)> = lines_with(&out.stdout, "resource ")
        .into_iter()
        .map(|l| {
            let mut w = l.split_whitespace().skip(1);
            (w.next().unwrap_or(""), w.next().unwrap_or(""))
        })
        .collect();
    assert_eq!(
        resources,
        [
            ("fixture://readme", "text/plain"),
            ("fixture://config", "application/json")
        ],
        "{}",
        out.stdout
    );
    let templates: Vec<&str> = lines_with(&out.stdout, "template ")
        .into_iter()
        .map(|l| first_word_after(l, "template "))
        .collect();
    assert_eq!(templates, ["fixture://items/{item_id}"], "{}", out.stdout);

    let out = t.run(allow, &["read", "py", "fixture://readme"], 0);
    assert_eq!(out.stdout, "Hello from the rivumi interop Python server.\n");
    let out = t.run(allow, &["read", "py", "fixture://config"], 0);
    assert_eq!(
        out.stdout,
        "{\"name\": \"rivumi-interop-py\", \"page_size\": 2}\n"
    );
    let out = t.run(allow, &["read", "py", "fixture://items/42"], 0);
    assert_eq!(out.stdout, "item 42\n");
    let out = t.run(allow, &["read", "py", "fixture://readme", "--json"], 0);
    let v = out.stdout_json();
    assert_eq!(v["contents"][0]["mimeType"], json!("text/plain"), "{v:#}");
    let out = t.run(allow, &["read", "py", "fixture://nope"], 4);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "Unknown resource: fixture://nope");

    let out = t.run(allow, &["prompts", "py"], 0);
    let rows = lines_with(&out.stdout, "prompt ");
    assert_eq!(rows.len(), 1, "{}", out.stdout);
    assert_eq!(first_word_after(rows[0], "prompt "), "review");
    assert_contains(rows[0], " code [language] ");

    let out = t.run(allow, &["prompt", "py", "review", "code=fn main(){}"], 0);
    assert_eq!(
        out.stdout,
        "# Asks for a review of a code snippet.\n[user]\n\
         Please review this rust code:\n\nfn main(){}\n"
    );
    let out = t.run(
        allow,
        &["prompt", "py", "review", "code=x = 1", "language=python", "--json"],
        0,
    );
    let v = out.stdout_json();
    assert_eq!(
        v["messages"][0]["content"]["text"],
        json!("Please review this python code:\n\nx = 1"),
        "{v:#}"
    );
    // Missing `code`: the SDK answers a JSON-RPC error with code 0.
    let out = t.run(allow, &["prompt", "py", "review"], 4);
    assert_contains(&out.stderr, "Missing required arguments");
}

// ---- both at once -------------------------------------------------------

#[test]
fn interop_both_servers_in_one_list() {
    // Config order py, everything; the allowlist names them the other way
    // round, and the output must follow the config.
    let Some(t) = Interop::new(
        "interop_both_servers_in_one_list",
        &[Server::Py, Server::Everything],
    ) else {
        return;
    };
    let allow = "everything,py";
    let out = t.run(allow, &["list"], 0);
    let headers: Vec<&str> =
        out.stdout.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(
        headers,
        [
            "py: rivumi-interop-py 1.0.0 (protocol 2025-11-25)",
            "everything: mcp-servers/everything 2.0.0 (protocol 2025-11-25)"
        ],
        "{}",
        out.stdout
    );
    let everything_at =
        out.stdout.find("everything: ").expect("everything header");
    let (py_part, everything_part) = out.stdout.split_at(everything_at);
    assert_eq!(tool_rows(py_part, "py"), expected_rows("py", PY_TOOLS));
    assert_eq!(tool_rows(py_part, "everything"), vec![]);
    assert_eq!(
        tool_rows(everything_part, "everything"),
        expected_rows("everything", EVERYTHING_TOOLS)
    );
    assert_eq!(out.stderr, "", "nothing on stderr");

    let out = t.run(allow, &["list", "--json"], 0);
    let v = out.stdout_json();
    let servers = v["servers"].as_array().expect("servers array");
    assert_eq!(servers.len(), 2, "{v:#}");
    check_json_listing(&servers[0], "py", "rivumi-interop-py", PY_TOOLS);
    check_json_listing(
        &servers[1],
        "everything",
        "mcp-servers/everything",
        EVERYTHING_TOOLS,
    );

    // Servers named on the command line come in the order given.
    let out = t.run(allow, &["list", "everything", "py", "--json"], 0);
    let v = out.stdout_json();
    let names: Vec<&Value> = v["servers"]
        .as_array()
        .expect("servers array")
        .iter()
        .map(|s| &s["server"])
        .collect();
    assert_eq!(names, [&json!("everything"), &json!("py")], "{v:#}");
}
