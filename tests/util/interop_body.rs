//! Interop test bodies written once and run over both transports: the
//! same commands, the same expected answers, whether the server is a
//! child on stdio (tests/interop.rs) or listens on 127.0.0.1
//! (tests/interop_http.rs). A body takes a [`Run`], which runs
//! `rivumi-mcp ARGS` against the transport's server (config written,
//! server allowlisted) and checks the exit code, the time taken and what
//! the transport must leave behind; each transport's `#[test]` functions
//! call the body, so each reports on its own, and check what only their
//! transport has (the HTTP session's DELETE, leftover processes).

use serde_json::json;

use super::interop::{
    EVERYTHING_TOOLS, PY_TOOLS, check_json_listing, expected_rows,
    first_word_after, first_words, lines_with, resource_rows, tool_rows,
};
use super::{Output, assert_contains};

/// Runs `rivumi-mcp ARGS` against one server and checks that it exits
/// with `code` (and whatever else the transport checks).
pub type Run<'a> = &'a dyn Fn(&[&str], i32) -> Output;

// ---- py_server.py (Python SDK), server `py` --------------------------------

/// `list`: 7 tools in 4 pages of 2, 2, 2 and 1, as a table and as JSON;
/// `--all` with the resources, templates and prompts.
pub fn py_list(run: Run<'_>) {
    let out = run(&["list"], 0);
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

    let out = run(&["list", "py", "--json"], 0);
    let v = out.stdout_json();
    let servers = v["servers"].as_array().expect("servers array");
    assert_eq!(servers.len(), 1, "{v:#}");
    check_json_listing(&servers[0], "py", "rivumi-interop-py", PY_TOOLS);
    assert_eq!(out.stderr, "");

    // --all: resources and prompts (not paginated) with the tools.
    let out = run(&["list", "py", "--all", "--json"], 0);
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

/// `call`: read tools, numbers, tools classified execute (refused
/// without `-y`), structured content, `isError` results and arguments
/// refused before the request.
pub fn py_call(run: Run<'_>) {
    // A read tool.
    let out = run(&["call", "mcp__py__echo", "message=hi"], 0);
    assert_eq!(out.stdout, "Echo: hi\n");
    assert_eq!(out.stderr, "");
    let out = run(&["call", "py", "echo", "message=hi", "--json"], 0);
    let v = out.stdout_json();
    assert_eq!(v["content"][0]["text"], json!("Echo: hi"), "{v:#}");
    assert_eq!(v["isError"], json!(false), "{v:#}");

    // Numbers (JSON Schema number and integer, pages 1 and 3).
    let out = run(&["call", "py", "add", "a=2", "b=3.5"], 0);
    assert_eq!(out.stdout, "2 + 3.5 = 5.5\n");
    assert_eq!(out.stderr, "");
    let out = run(&["call", "mcp__py__add", "a=2", "b=3"], 0);
    assert_eq!(out.stdout, "2 + 3 = 5\n");
    let out = run(&["call", "py", "sleep_ms", "ms=300"], 0);
    assert_eq!(out.stdout, "slept 300 ms\n");

    // Tools classified execute: refused without -y, run with it (a string
    // stays a string, pydantic would refuse a number for it; a boolean is
    // converted).
    let out = run(&["call", "py", "greet", "name=Ada"], 7);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "is classified execute and needs approval");
    let out =
        run(&["call", "py", "greet", "name=007", "excited=true", "-y"], 0);
    assert_eq!(out.stdout, "Hello, 007!\n");
    assert_eq!(out.stderr, "");
    let out = run(&["call", "py", "greet", "name=Ada", "-y"], 0);
    assert_eq!(out.stdout, "Hello, Ada.\n");
    // structuredContent.
    let out =
        run(&["call", "py", "get_weather", "city=Oslo", "-y", "--json"], 0);
    let v = out.stdout_json();
    assert_eq!(
        v["structuredContent"],
        json!({"city": "Oslo", "temperature": 21.5, "conditions": "sunny"}),
        "{v:#}"
    );

    // The error tool: isError -> exit 1, its text on stdout.
    let out = run(&["call", "py", "fail", "reason=nope", "-y"], 1);
    assert_eq!(out.stdout, "Error executing tool fail: nope\n");
    assert_contains(&out.stderr, "tool 'fail' reported an error (isError)");
    let out = run(&["call", "mcp__py__fail", "-y", "--json"], 1);
    let v = out.stdout_json();
    assert_eq!(v["isError"], json!(true), "{v:#}");
    assert_eq!(
        v["content"][0]["text"],
        json!("Error executing tool fail: boom")
    );
    // Bad arguments: the server's validation error is an isError result.
    let out = run(&["call", "py", "add", "a:=\"x\"", "b=1"], 1);
    assert!(
        out.stdout.starts_with(
            "Error executing tool add: 1 validation error for addArguments"
        ),
        "{}",
        out.stdout
    );
    // Refused locally: a missing required argument.
    let out = run(&["call", "py", "add", "a=1"], 2);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "missing b");
}

/// `resources`, `read` (text, JSON, a template, an unknown URI),
/// `prompts` and `prompt` (with and without its required argument).
pub fn py_resources_and_prompts(run: Run<'_>) {
    let out = run(&["resources", "py"], 0);
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
    assert_eq!(out.stderr, "");

    let out = run(&["read", "py", "fixture://readme"], 0);
    assert_eq!(out.stdout, "Hello from the rivumi interop Python server.\n");
    assert_eq!(out.stderr, "");
    let out = run(&["read", "py", "fixture://config"], 0);
    assert_eq!(
        out.stdout,
        "{\"name\": \"rivumi-interop-py\", \"page_size\": 2}\n"
    );
    let out = run(&["read", "py", "fixture://items/42"], 0);
    assert_eq!(out.stdout, "item 42\n");
    let out = run(&["read", "py", "fixture://readme", "--json"], 0);
    let v = out.stdout_json();
    assert_eq!(v["contents"][0]["mimeType"], json!("text/plain"), "{v:#}");
    let out = run(&["read", "py", "fixture://config", "--json"], 0);
    let v = out.stdout_json();
    assert_eq!(
        v["contents"][0]["mimeType"],
        json!("application/json"),
        "{v:#}"
    );
    let out = run(&["read", "py", "fixture://nope"], 4);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "Unknown resource: fixture://nope");

    let out = run(&["prompts", "py"], 0);
    let rows = lines_with(&out.stdout, "prompt ");
    assert_eq!(rows.len(), 1, "{}", out.stdout);
    assert_eq!(first_word_after(rows[0], "prompt "), "review");
    assert_contains(rows[0], " code [language] ");
    assert_eq!(out.stderr, "");

    let out = run(&["prompt", "py", "review", "code=fn main(){}"], 0);
    assert_eq!(
        out.stdout,
        "# Asks for a review of a code snippet.\n[user]\n\
         Please review this rust code:\n\nfn main(){}\n"
    );
    assert_eq!(out.stderr, "");
    let out = run(
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
    let out = run(&["prompt", "py", "review"], 2);
    assert_contains(
        &out.stderr,
        "prompt 'review' needs an argument: missing code",
    );
}

// ---- server-everything, server `everything` --------------------------------

/// `list`: one page of 15 tools, as a table and as JSON.
pub fn everything_list(run: Run<'_>) {
    let out = run(&["list"], 0);
    assert_eq!(
        out.stdout.lines().next(),
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
    assert!(!out.stdout.contains("incomplete"), "{}", out.stdout);
    assert_eq!(out.stderr, "", "nothing on stderr");

    let out = run(&["list", "everything", "--json"], 0);
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
    assert_eq!(out.stderr, "");
}

/// `call`: a form and the roots the server asks from inside a tool,
/// strings and numbers as the schema says, `isError`, structured content,
/// progress before the result, approval of tools classified execute, and
/// what is refused before the request.
pub fn everything_call(run: Run<'_>) {
    // A form the server asks from inside a tool, answered from --answer
    // and the defaults; and the roots named with --root.
    let out = run(
        &[
            "call",
            "-y",
            "everything",
            "trigger-elicitation-request",
            "--elicit",
            "defaults",
            "--answer",
            "name=Ann",
        ],
        0,
    );
    assert_contains(&out.stdout, "- Name: Ann");
    assert_contains(&out.stdout, "- Favorite Integer: 42");
    let out =
        run(&["call", "-y", "everything", "get-roots-list", "--root", "/"], 0);
    assert_contains(&out.stdout, "URI: file:///\n");

    // A read tool.
    let out = run(&["call", "mcp__everything__echo", "message=hi"], 0);
    assert_eq!(out.stdout, "Echo: hi\n");
    assert_eq!(out.stderr, "");
    // A string property stays a string, even when it looks like a number
    // (the server's zod schema would refuse a number).
    let out = run(&["call", "everything", "echo", "message=007"], 0);
    assert_eq!(out.stdout, "Echo: 007\n");

    // a and b are `number` in the schema: coerced from "2" and "3", or the
    // server would answer with an isError validation failure.
    let out = run(&["call", "everything", "get-sum", "a=2", "b=3"], 0);
    assert_eq!(out.stdout, "The sum of 2 and 3 is 5.\n");
    assert_eq!(out.stderr, "");
    let out =
        run(&["call", "everything", "get-sum", "a=2", "b=3", "--json"], 0);
    let v = out.stdout_json();
    assert_eq!(v["content"][0]["text"], json!("The sum of 2 and 3 is 5."));
    assert_eq!(v.get("isError"), None, "{v:#}");
    let out = run(&["call", "everything", "get-sum", "a:=1.5", "b=2"], 0);
    assert_eq!(out.stdout, "The sum of 1.5 and 2 is 3.5.\n");

    // A raw JSON string for a number: the server says isError -> exit 1,
    // with its text on stdout.
    let out = run(&["call", "everything", "get-sum", "a:=\"x\"", "b=1"], 1);
    assert_eq!(
        out.stdout,
        "MCP error -32602: Input validation error: Invalid arguments for \
         tool get-sum: Invalid input: expected number, received string at \
         a\n"
    );
    assert_contains(&out.stderr, "reported an error (isError)");
    let out = run(
        &["call", "everything", "get-sum", "a:=\"x\"", "b=1", "--json"],
        1,
    );
    assert_eq!(out.stdout_json()["isError"], json!(true));

    // structuredContent: the text block as sent; structuredContent is not
    // printed again, since the text block already holds the same JSON.
    let out = run(
        &["call", "everything", "get-structured-content", "location=New York"],
        0,
    );
    assert_eq!(
        out.stdout,
        "{\"temperature\":33,\"conditions\":\"Cloudy\",\"humidity\":82}\n"
    );
    let out = run(
        &[
            "call",
            "everything",
            "get-structured-content",
            "location=New York",
            "--json",
        ],
        0,
    );
    let v = out.stdout_json();
    assert_eq!(
        v["structuredContent"],
        json!({"temperature": 33, "conditions": "Cloudy", "humidity": 82}),
        "{v:#}"
    );

    // Progress notifications before the result.
    let out = run(
        &[
            "call",
            "everything",
            "trigger-long-running-operation",
            "duration=1",
            "steps=2",
        ],
        0,
    );
    assert_eq!(
        out.stdout,
        "Long running operation completed. Duration: 1 seconds, Steps: 2.\n"
    );
    assert_eq!(out.stderr, "");

    // A tool classified execute needs -y.
    let out = run(&["call", "everything", "toggle-simulated-logging"], 7);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "is classified execute and needs approval");
    let out =
        run(&["call", "everything", "toggle-simulated-logging", "-y"], 0);
    assert!(
        out.stdout.starts_with(
            "Started simulated, random-leveled logging for session "
        ),
        "{}",
        out.stdout
    );

    // A value that cannot be a number is refused before the call: usage.
    let out = run(&["call", "everything", "get-sum", "a=2", "b=x"], 2);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "'x' is not a number");
    // An unknown tool is found out from tools/list: usage, with a hint.
    let out = run(&["call", "mcp__everything__get-summ"], 2);
    assert_contains(
        &out.stderr,
        "no tool 'get-summ'; did you mean 'get-sum'?",
    );
}

/// `resources`, `read` (static and dynamic, an unknown URI), `prompts`
/// and `prompt` (with and without its required argument).
pub fn everything_resources_and_prompts(run: Run<'_>) {
    let out = run(&["resources", "everything"], 0);
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
    assert_eq!(out.stderr, "");

    let out = run(&["resources", "everything", "--json"], 0);
    let v = out.stdout_json();
    let s = &v["servers"][0];
    assert_eq!(s["complete"], json!(true), "{v:#}");
    assert_eq!(s["resources"].as_array().map(Vec::len), Some(7), "{v:#}");
    assert_eq!(
        s["resourceTemplates"].as_array().map(Vec::len),
        Some(2),
        "{v:#}"
    );

    let out =
        run(&["read", "everything", "demo://resource/dynamic/text/1"], 0);
    // The rest of the text is the current time.
    assert!(
        out.stdout.starts_with(
            "Resource 1: This is a plaintext resource created at "
        ),
        "{}",
        out.stdout
    );
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    assert_eq!(out.stderr, "");
    let out = run(
        &["read", "everything", "demo://resource/static/document/features.md"],
        0,
    );
    assert!(out.stdout.starts_with("# Everything Server"), "{}", out.stdout);
    let out = run(
        &["read", "everything", "demo://resource/dynamic/text/1", "--json"],
        0,
    );
    let v = out.stdout_json();
    assert_eq!(
        v["contents"][0]["uri"],
        json!("demo://resource/dynamic/text/1")
    );
    // An unknown URI is a JSON-RPC error: exit 4.
    let out = run(&["read", "everything", "demo://nope"], 4);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "Resource demo://nope not found");

    let out = run(&["prompts", "everything"], 0);
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

    let out = run(&["prompt", "everything", "args-prompt", "city=Paris"], 0);
    assert_eq!(out.stdout, "[user]\nWhat's weather in Paris?\n");
    assert_eq!(out.stderr, "");
    let out = run(
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
    let out = run(&["prompt", "everything", "args-prompt"], 2);
    assert_contains(
        &out.stderr,
        "prompt 'args-prompt' needs an argument: missing city",
    );
}
