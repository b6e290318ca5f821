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
//! in under [`LIMIT`](crate::util::interop::LIMIT), shutdown included.
//! Each test gives its servers a unique marker argument, and after every
//! command no process whose command line carries that marker may be left
//! running. What this shares with interop_http.rs (one test at a time
//! among both, too) is in `util/interop.rs`; the bodies of the list, call
//! and resources/prompts tests of both servers are those of the HTTP
//! tests (`util/interop_body.rs`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::util::interop::{
    EVERYTHING_TOOLS, FASTMCP_LIMIT, FASTMCP_SERVER, LIMIT, PY_TOOLS, Turn,
    assert_no_leftovers, check_json_listing, expected_rows, fastmcp_entries,
    installed, tool_rows,
};
use crate::util::interop_body as body;
use crate::util::{Output, assert_contains, sampling_model, write_mcp_json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    /// `everything`: server-everything over stdio.
    Everything,
    /// `py`: `py_server.py` over stdio.
    Py,
    /// `pe`: `py_elicit.py` (a Python SDK server that asks) over stdio.
    PyElicit,
}

impl Server {
    fn name(self) -> &'static str {
        match self {
            Server::Everything => "everything",
            Server::Py => "py",
            Server::PyElicit => "pe",
        }
    }
}

/// One test's turn, with a `.mcp.json` naming its servers.
struct Interop {
    turn: Turn,
}

impl Interop {
    /// `None` when the test is to be skipped (see [`installed`]).
    fn new(test: &str, entries: &[Server]) -> Option<Interop> {
        let s = installed(test, &[])?;
        let turn = Turn::take("interop", test);
        let marker = &turn.marker;
        let servers: Vec<(&str, Value)> = entries
            .iter()
            .map(|e| {
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
                    Server::PyElicit => json!({
                        "command": s.python,
                        "args": ["-X", format!("{marker}=1"),
                                 s.py_server.with_file_name("py_elicit.py")],
                    }),
                };
                (e.name(), entry)
            })
            .collect();
        write_mcp_json(&turn.dir, &servers);
        Some(Interop { turn })
    }

    /// Runs `rivumi-mcp ARGS` with `allow` as the allowlist and checks the
    /// exit code, the time taken and that no server process is left.
    #[track_caller]
    fn run(&self, allow: &str, args: &[&str], code: i32) -> Output {
        self.run_within(allow, args, code, LIMIT)
    }

    /// [`Interop::run`] with another time limit.
    #[track_caller]
    fn run_within(
        &self,
        allow: &str,
        args: &[&str],
        code: i32,
        limit: Duration,
    ) -> Output {
        let cmd = self.turn.command(allow, args);
        let out = self.turn.run_within(&cmd, args, code, limit, String::new);
        assert_no_leftovers(
            &self.turn.marker,
            "rivumi-mcp exited",
            &cmd.describe(),
        );
        out
    }
}

// ---- server-everything --------------------------------------------------

#[test]
fn interop_everything_asks_only_what_was_declared() {
    let Some(t) =
        Interop::new("interop_everything_asks", &[Server::Everything])
    else {
        return;
    };
    let allow = "everything";
    // Without --root or --sampling-command the server hides the tools
    // that need them; elicitation is always declared.
    let out = t.run(allow, &["list", "everything"], 0);
    assert_contains(&out.stdout, "trigger-elicitation-request");
    assert!(!out.stdout.contains("get-roots-list"), "{}", out.stdout);
    assert!(!out.stdout.contains("trigger-sampling"), "{}", out.stdout);
    let root = t.turn.dir.path("a root");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.to_str().unwrap();
    let model = sampling_model(&t.turn.dir, "m1", "hi from the operator");
    let model = model.to_str().unwrap();
    let out = t.run(
        allow,
        &["list", "everything", "--root", root, "--sampling-command", model],
        0,
    );
    assert_contains(&out.stdout, "get-roots-list");
    assert_contains(&out.stdout, "trigger-sampling-request");

    // `call -y everything ARGS`, exit 0.
    let call = |args: &[&str]| {
        let mut all = vec!["call", "-y", "everything"];
        all.extend_from_slice(args);
        t.run(allow, &all, 0)
    };
    let out = call(&["get-roots-list", "--root", root]);
    assert_contains(&out.stdout, "URI: file://");
    assert_contains(&out.stdout, "a%20root");

    // Before the operands: an option that runs a program may not follow
    // one.
    let out = t.run(
        allow,
        &[
            "call",
            "-y",
            "--sampling-command",
            model,
            "everything",
            "trigger-sampling-request",
            "prompt=hi",
        ],
        0,
    );
    assert_contains(&out.stdout, "hi from the operator");
    assert_contains(&out.stdout, "\"model\": \"m1\"");

    // The form: defaults for the rest, a name given, a multi-select typed
    // from "a,b"; without answers for its required name, declined.
    let form = ["trigger-elicitation-request", "--elicit", "defaults"];
    let answers = [
        "--answer",
        "name=Ann",
        "--answer",
        "untitledMultipleSelectEnum=Piano,Drums",
    ];
    let out = call(&[&form[..], &answers[..]].concat());
    assert_contains(&out.stdout, "- Name: Ann");
    assert_contains(&out.stdout, "- Favorite Integer: 42");
    assert_contains(&out.stdout, "\"Piano\",\n      \"Drums\"");
    let out = call(&form);
    assert_contains(&out.stdout, "declined");
    assert_contains(&out.stderr, "required field(s) 'name'");
}

// ---- a Python SDK server that asks ----------------------------------------

#[test]
fn interop_py_elicits_forms_urls_and_roots() {
    let Some(t) = Interop::new("interop_py_elicit", &[Server::PyElicit])
    else {
        return;
    };
    let allow = "pe";
    let out =
        t.run(allow, &["call", "-y", "pe", "book", "--answer", "seats=2"], 0);
    assert_eq!(out.stdout, "accept seats=2 name=guest window=false\n");
    let out = t.run(
        allow,
        &[
            "call",
            "-y",
            "pe",
            "book",
            "--answer",
            "seats=3",
            "--answer",
            "window=true",
            "--answer",
            "name=007",
        ],
        0,
    );
    assert_eq!(out.stdout, "accept seats=3 name=007 window=true\n");
    // Outside the schema's range: never sent; declined.
    let out =
        t.run(allow, &["call", "-y", "pe", "book", "--answer", "seats=9"], 0);
    assert_eq!(out.stdout, "decline\n");
    assert_contains(&out.stderr, "field 'seats': must be at most 8");
    let out =
        t.run(allow, &["call", "-y", "pe", "book", "--elicit", "cancel"], 0);
    assert_eq!(out.stdout, "cancel\n");
    // URL mode without a terminal: shown on stderr, declined.
    let out = t.run(allow, &["call", "-y", "pe", "open_page"], 0);
    assert_eq!(out.stdout, "decline\n");
    assert_contains(&out.stderr, "https://example.com/pay");
    // Roots: the canonical directory as a file:// URI.
    let dir = t.turn.dir.path("r");
    std::fs::create_dir_all(&dir).unwrap();
    let canon = std::fs::canonicalize(&dir).unwrap();
    let out = t.run(
        allow,
        &["call", "-y", "pe", "roots", "--root", dir.to_str().unwrap()],
        0,
    );
    assert_eq!(out.stdout, format!("file://{}\n", canon.display()));
}

// The bodies are those of the HTTP test too (util/interop_body.rs).

#[test]
fn interop_everything_list() {
    let Some(t) =
        Interop::new("interop_everything_list", &[Server::Everything])
    else {
        return;
    };
    body::everything_list(&|args, code| t.run("everything", args, code));
}

#[test]
fn interop_everything_call() {
    let Some(t) =
        Interop::new("interop_everything_call", &[Server::Everything])
    else {
        return;
    };
    body::everything_call(&|args, code| t.run("everything", args, code));
}

#[test]
fn interop_everything_resources_and_prompts() {
    let Some(t) = Interop::new(
        "interop_everything_resources_and_prompts",
        &[Server::Everything],
    ) else {
        return;
    };
    let run = |args: &[&str], code| t.run("everything", args, code);
    body::everything_resources_and_prompts(&run);
}

// ---- py_server.py (Python SDK) --------------------------------------------
// The bodies are those of the HTTP tests too (util/interop_body.rs).

#[test]
fn interop_py_list_paged() {
    let Some(t) = Interop::new("interop_py_list_paged", &[Server::Py]) else {
        return;
    };
    body::py_list(&|args, code| t.run("py", args, code));
}

#[test]
fn interop_py_call() {
    let Some(t) = Interop::new("interop_py_call", &[Server::Py]) else {
        return;
    };
    body::py_call(&|args, code| t.run("py", args, code));
}

#[test]
fn interop_py_resources_and_prompts() {
    let Some(t) =
        Interop::new("interop_py_resources_and_prompts", &[Server::Py])
    else {
        return;
    };
    body::py_resources_and_prompts(&|args, code| t.run("py", args, code));
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

// ---- fastmcp and the Python SDK: arguments and output -------------------

/// A turn whose `.mcp.json` has `fm` (fastmcp) and `sdk` (the Python SDK),
/// the same tools on each (fixtures/interop/fastmcp_server.py).
fn typed_servers(test: &str) -> Option<Interop> {
    let s = installed(test, &[FASTMCP_SERVER])?;
    let turn = Turn::take("interop", test);
    write_mcp_json(&turn.dir, &fastmcp_entries(&s, &turn.marker));
    Some(Interop { turn })
}

impl Interop {
    /// [`Interop::run`] with the longer [`FASTMCP_LIMIT`].
    #[track_caller]
    fn run_slow(&self, args: &[&str], code: i32) -> Output {
        self.run_within("fm,sdk", args, code, FASTMCP_LIMIT)
    }
}

#[test]
fn interop_fastmcp_arguments_match_the_schema() {
    let Some(t) = typed_servers("interop_fastmcp_arguments") else {
        return;
    };
    for s in ["fm", "sdk"] {
        // list[str] | None and int | None: anyOf with null.
        let out = t.run_slow(
            &["call", "-y", s, "tagged", r#"tags=["a","b"]"#, "limit=5"],
            0,
        );
        assert_eq!(out.stdout, "tags=['a', 'b'] limit=5\n", "{s}");
        let out = t.run_slow(&["call", "-y", s, "tagged", "tags=null"], 0);
        assert_eq!(out.stdout, "tags=None limit=None\n", "{s}");
        // Literal[1, 2, 3]: an integer enum, refused locally when outside.
        let out = t.run_slow(&["call", "-y", s, "level", "n=2"], 0);
        assert_eq!(out.stdout, "level=2\n", "{s}");
        let out = t.run_slow(&["call", "-y", s, "level", "n=4"], 2);
        assert_contains(
            &out.stderr,
            "argument 'n': '4' is not one of 1, 2, 3",
        );
        // Annotated[int, Field(ge=0, le=100)]: an integer; the range is
        // the server's to check.
        let out = t.run_slow(&["call", "-y", s, "percent", "pct=42"], 0);
        assert_eq!(out.stdout, "pct=42\n", "{s}");
        let out = t.run_slow(&["call", "-y", s, "percent", "pct=101"], 1);
        assert_contains(&out.stdout, "less than or equal to 100");
        // A name the schema does not list.
        let out = t.run_slow(&["call", "-y", s, "tagged", "limt=5"], 2);
        assert_contains(
            &out.stderr,
            "unknown argument 'limt'; did you mean 'limit'?",
        );
        // The qualified name after the server name.
        let q = format!("mcp__{s}__level");
        let out = t.run_slow(&["call", "-y", s, &q, "n=1"], 0);
        assert_eq!(out.stdout, "level=1\n", "{s}");
    }
}

#[test]
fn interop_fastmcp_output_a_script_can_trust() {
    let Some(t) = typed_servers("interop_fastmcp_output") else {
        return;
    };
    for s in ["fm", "sdk"] {
        // x=$(rivumi-mcp call ...) is the tool's text: {"result": 6} is
        // not printed again.
        let out = t.run_slow(&["call", "-y", s, "count", "n=5"], 0);
        assert_eq!(out.stdout, "6\n", "{s}");
        assert_eq!(out.stderr, "", "{s}");
        let out = t.run_slow(&["call", "-y", s, "tagged", "limit=1"], 0);
        assert_eq!(out.stdout, "tags=None limit=1\n", "{s}");
        // A dict: its JSON text, once.
        let out = t.run_slow(&["call", "-y", s, "weather", "city=Oslo"], 0);
        let v: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(v, json!({"city": "Oslo", "temperature": 21.5}), "{s}");
        // --json: the whole result.
        let out = t.run_slow(&["call", "-y", s, "count", "n=5", "--json"], 0);
        let v = out.stdout_json();
        assert_eq!(v["structuredContent"], json!({"result": 6}), "{s}");
        assert_eq!(v["content"][0]["text"], "6", "{s}");
        // Truncation: only the kept bytes on stdout, the marker on
        // stderr, exit 8; --json says so too.
        let big = ["call", "-y", s, "big", "n=5000", "--max-output", "2K"];
        let out = t.run_slow(&big, 8);
        assert_eq!(out.stdout, format!("{}\n", "x".repeat(2048)), "{s}");
        assert_contains(&out.stderr, "output truncated: the result was ");
        let mut json_args = big.to_vec();
        json_args.push("--json");
        let out = t.run_slow(&json_args, 8);
        assert_eq!(out.stdout_json()["truncated"], true, "{s}");
    }
}
