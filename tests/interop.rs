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
//! among both, too) is in `util/interop.rs`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::util::interop::{
    EVERYTHING_TOOLS, FASTMCP_LIMIT, FASTMCP_SERVER, LIMIT, PY_TOOLS, Turn,
    assert_no_leftovers, check_json_listing, expected_rows, fastmcp_entries,
    first_word_after, first_words, installed, lines_with, resource_rows,
    tool_rows,
};
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
    let resources = first_words(&out.stdout, "resource ");
    let want: Vec<String> = docs
        .iter()
        .map(|d| format!("demo://resource/static/document/{d}.md"))
        .collect();
    assert_eq!(resources, want, "{}", out.stdout);
    for l in lines_with(&out.stdout, "resource ") {
        assert_contains(l, "  text/markdown  ");
    }
    let templates = first_words(&out.stdout, "template ");
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
    let prompts = first_words(&out.stdout, "prompt ");
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
    // The required argument missing: refused before the request, exit 2.
    let out = t.run(allow, &["prompt", "everything", "args-prompt"], 2);
    assert_contains(
        &out.stderr,
        "prompt 'args-prompt' needs an argument: missing city",
    );
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
    let resources = resource_rows(&out.stdout);
    assert_eq!(
        resources,
        [
            ("fixture://readme", "text/plain"),
            ("fixture://config", "application/json")
        ],
        "{}",
        out.stdout
    );
    let templates = first_words(&out.stdout, "template ");
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
    // Missing `code`: refused before the request, as the prompt's
    // declared arguments say.
    let out = t.run(allow, &["prompt", "py", "review"], 2);
    assert_contains(
        &out.stderr,
        "prompt 'review' needs an argument: missing code",
    );
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
