//! `call` and the read-only bridges (`resources`, `read`, `prompts`,
//! `prompt`) against the fixture server: argument typing from the tool's
//! inputSchema, `--args`, usage errors caught before the call, isError,
//! binary content and `--save`, awkward tool names.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::util::{
    Dir, TestCommand, assert_absent, assert_contains, call_arguments,
    demo_recording, fixture_server, received, run_allowed, write_mcp_json,
};

/// The fixture's 1x1 PNG, as it sends it.
const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ\
    AAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

const LONG_QUALIFIED: &str =
    "mcp__demo__long_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_93854d";

/// `rivumi-mcp ARGS` with `demo` allowed.
fn run(dir: &Dir, args: &[&str]) -> TestCommand {
    run_allowed(dir, "demo", args)
}

fn decode(b64: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(b64).unwrap()
}

#[test]
fn qualified_name_calls_the_tool() {
    let (dir, rec) = demo_recording("call_echo");
    let out = run(&dir, &["call", "-y", "mcp__demo__echo", "text=hi"])
        .assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    assert_eq!(out.stderr, "");
    let calls = received(&rec, "tools/call");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["name"], "echo");
    assert_eq!(calls[0]["arguments"], json!({"text": "hi"}));
}

#[test]
fn server_and_tool_as_two_words_with_a_json_pair() {
    let (dir, rec) = demo_recording("call_add");
    let out = run(&dir, &["call", "-y", "demo", "add", "a=1", "b:=2"])
        .assert_exit(0);
    assert_eq!(out.stdout, "3\n{\n  \"sum\": 3\n}\n");
    assert_eq!(out.stderr, "");
    let calls = received(&rec, "tools/call");
    assert_eq!(calls[0]["arguments"], json!({"a": 1, "b": 2}));
    let out =
        run(&dir, &["call", "-y", "demo", "add", "a=1", "b:=2", "--json"])
            .assert_exit(0);
    assert_eq!(out.stdout_json()["structuredContent"], json!({"sum": 3}));
}

#[test]
fn plain_values_follow_the_declared_type() {
    let (dir, _) = demo_recording("call_types");
    let out = run(
        &dir,
        &[
            "call", "demo", "types", "s=007", "i=7", "n=1.5", "b=true",
            "either=x", "--json",
        ],
    )
    .assert_exit(0);
    let sc = &out.stdout_json()["structuredContent"];
    assert_eq!(
        sc,
        &json!({"s": "007", "i": 7, "n": 1.5, "b": true, "either": "x"})
    );
    assert!(sc["s"].is_string() && sc["i"].is_u64());
}

#[test]
fn value_of_the_wrong_type_is_a_usage_error_before_the_call() {
    let (dir, rec) = demo_recording("call_bad_integer");
    let out =
        run(&dir, &["call", "-y", "demo", "types", "i=abc"]).assert_exit(2);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': argument 'i': 'abc' is not an integer \
         (use i:=<json> for raw JSON)\n"
    );
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn args_from_inline_json_stdin_and_file() {
    let (dir, rec) = demo_recording("call_args");
    let out = run(
        &dir,
        &["call", "-y", "demo", "echo", "--args", r#"{"text":"x"}"#],
    )
    .assert_exit(0);
    assert_eq!(out.stdout, "x\n");
    let out = run(&dir, &["call", "-y", "demo", "echo", "--args", "-"])
        .stdin(r#"{"text": "from stdin"}"#)
        .assert_exit(0);
    assert_eq!(out.stdout, "from stdin\n");
    dir.write("args.json", r#"{"text": "from file"}"#);
    let out =
        run(&dir, &["call", "-y", "demo", "echo", "--args", "@args.json"])
            .assert_exit(0);
    assert_eq!(out.stdout, "from file\n");
    let texts = call_arguments(&rec);
    assert_eq!(
        texts,
        [
            json!({"text": "x"}),
            json!({"text": "from stdin"}),
            json!({"text": "from file"})
        ]
    );
}

#[test]
fn missing_required_argument_is_a_usage_error() {
    let (dir, rec) = demo_recording("call_missing_required");
    let out = run(&dir, &["call", "-y", "demo", "echo"]).assert_exit(2);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': tool 'echo' needs an argument: missing \
         text\n"
    );
    let out = run(&dir, &["call", "-y", "demo", "add"]).assert_exit(2);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': tool 'add' needs arguments: missing a, \
         b\n"
    );
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn unknown_tool_is_a_usage_error_with_a_suggestion() {
    let (dir, rec) = demo_recording("call_unknown_tool");
    let out =
        run(&dir, &["call", "-y", "demo", "ech", "text=hi"]).assert_exit(2);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': no tool 'ech'; did you mean 'echo'? \
         (see: rivumi-mcp list demo)\n"
    );
    let out = run(&dir, &["call", "-y", "mcp__demo__nothing_like_it"])
        .assert_exit(2);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': no tool 'nothing_like_it' (see: \
         rivumi-mcp list demo)\n"
    );
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn tool_error_exits_1_and_prints_its_text() {
    let (dir, _) = demo_recording("call_fail");
    let out = run(&dir, &["call", "-y", "demo", "fail"]).assert_exit(1);
    assert_eq!(out.stdout, "it failed\n");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': tool 'fail' reported an error (isError)\n"
    );
    let out =
        run(&dir, &["call", "-y", "demo", "fail", "--json"]).assert_exit(1);
    assert_eq!(
        out.stdout_json(),
        json!({"content": [{"type": "text", "text": "it failed"}],
               "isError": true})
    );
}

#[test]
fn binary_content_is_summarised() {
    let (dir, _) = demo_recording("call_media");
    let out = run(&dir, &["call", "-y", "demo", "media"]).assert_exit(0);
    assert_eq!(
        out.stdout,
        "[image: image/png, 70 bytes; use --save DIR to keep it]\n\
         [audio: audio/wav, 4 bytes; use --save DIR to keep it]\n\
         [resource link: fixture://docs/readme (text/plain)]\n\
         hello\n"
    );
    assert_eq!(out.stderr, "");
}

#[test]
fn save_writes_the_decoded_bytes() {
    let (dir, _) = demo_recording("call_media_save");
    let out = run(&dir, &["call", "-y", "demo", "media", "--save", "out"])
        .assert_exit(0);
    let saved: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split_once(", saved to ").map(|(_, p)| p))
        .map(|p| p.strip_suffix(']').unwrap())
        .collect();
    assert_eq!(saved.len(), 2, "{}", out.stdout);
    assert!(out.stdout.starts_with("[image: image/png, 70 bytes, saved to "));
    assert!(saved[0].starts_with("out/") && saved[0].ends_with(".png"));
    assert!(saved[1].starts_with("out/") && saved[1].ends_with(".wav"));
    assert_eq!(std::fs::read(dir.path(saved[0])).unwrap(), decode(PNG_1X1));
    assert_eq!(std::fs::read(dir.path(saved[1])).unwrap(), decode("UklGRg=="));
    assert_eq!(std::fs::read_dir(dir.path("out")).unwrap().count(), 2);
}

#[test]
fn json_prints_the_whole_result() {
    let (dir, _) = demo_recording("call_json");
    let out = run(&dir, &["call", "-y", "demo", "echo", "text=hi", "--json"])
        .assert_exit(0);
    assert_eq!(
        out.stdout_json(),
        json!({"content": [{"type": "text", "text": "hi"}]})
    );
    let out =
        run(&dir, &["call", "-y", "demo", "media", "--json"]).assert_exit(0);
    let v = out.stdout_json();
    assert_eq!(v["content"][0]["data"], PNG_1X1);
    assert_eq!(v["content"].as_array().unwrap().len(), 4);
}

#[test]
fn long_tool_is_callable_by_hashed_and_original_name() {
    let (dir, rec) = demo_recording("call_long_name");
    let out = run(&dir, &["call", "-y", LONG_QUALIFIED]).assert_exit(0);
    assert_eq!(out.stdout, "long\n");
    let long = format!("long_{}", "x".repeat(65));
    let out = run(&dir, &["call", "-y", "demo", &long]).assert_exit(0);
    assert_eq!(out.stdout, "long\n");
    let names: Vec<Value> = received(&rec, "tools/call")
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(names, [json!(long), json!(long)]);
}

#[test]
fn odd_tool_name_is_callable_sanitised_and_as_is() {
    let (dir, rec) = demo_recording("call_odd_name");
    let out =
        run(&dir, &["call", "-y", "mcp__demo__odd_name_"]).assert_exit(0);
    assert_eq!(out.stdout, "odd\n");
    let out = run(&dir, &["call", "-y", "demo", "odd name!"]).assert_exit(0);
    assert_eq!(out.stdout, "odd\n");
    let names: Vec<Value> = received(&rec, "tools/call")
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(names, [json!("odd name!"), json!("odd name!")]);
}

// ---------------------------------------------------------------------------
// Bridges
// ---------------------------------------------------------------------------

#[test]
fn resources_lists_resources_and_templates() {
    let (dir, _) = demo_recording("call_resources");
    let out = run(&dir, &["resources", "demo"]).assert_exit(0);
    let rows: Vec<Vec<&str>> = out
        .stdout
        .lines()
        .map(|l| {
            l.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect()
        })
        .collect();
    assert_eq!(
        rows,
        [
            vec!["demo: rivumi-mcp-fixture 1.0.0 (protocol 2025-11-25)"],
            vec![
                "resource fixture://docs/readme",
                "text/plain",
                "readme",
                "A short readme."
            ],
            vec![
                "resource fixture://docs/guide",
                "text/markdown",
                "guide",
                "A markdown guide."
            ],
            vec![
                "resource fixture://bin/blob",
                "application/octet-stream",
                "blob",
                "Bytes 0-255."
            ],
            vec![
                "resource fixture://docs/ansi",
                "text/plain",
                "ansi",
                "Text full of escapes."
            ],
            vec!["template fixture://docs/{name}", "doc"],
        ]
    );
    assert_eq!(out.stderr, "");
}

#[test]
fn read_prints_text_and_summarises_blobs() {
    let (dir, _) = demo_recording("call_read");
    let out =
        run(&dir, &["read", "demo", "fixture://docs/readme"]).assert_exit(0);
    assert_eq!(out.stdout, "hello\n");
    assert_eq!(out.stderr, "");
    let out =
        run(&dir, &["read", "demo", "fixture://bin/blob"]).assert_exit(0);
    assert_eq!(
        out.stdout,
        "[blob: application/octet-stream, 256 bytes; use --save DIR to keep \
         it]\n"
    );
    let out =
        run(&dir, &["read", "demo", "fixture://bin/blob", "--save", "b"])
            .assert_exit(0);
    let path = out
        .stdout
        .strip_prefix("[blob: application/octet-stream, 256 bytes, saved to ")
        .and_then(|p| p.strip_suffix("]\n"))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    let bytes: Vec<u8> = (0..=255u8).collect();
    assert_eq!(std::fs::read(dir.path(path)).unwrap(), bytes);
}

#[test]
fn read_of_an_unknown_uri_is_a_server_error() {
    let (dir, _) = demo_recording("call_read_unknown");
    let out = run(&dir, &["read", "demo", "fixture://nope"]).assert_exit(4);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': server error -32002 (ResourceNotFound): resource not found: \
         fixture://nope ({\"uri\":\"fixture://nope\"})\n"
    );
}

#[test]
fn prompts_lists_prompts_with_their_arguments() {
    let (dir, _) = demo_recording("call_prompts");
    let out = run(&dir, &["prompts", "demo"]).assert_exit(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    assert_eq!(
        lines[0],
        "demo: rivumi-mcp-fixture 1.0.0 (protocol 2025-11-25)"
    );
    let cols = |l: &str| -> Vec<String> {
        l.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    assert_eq!(
        cols(lines[1]),
        ["prompt greet", "name [style]", "Greet someone by name."]
    );
    assert_eq!(
        cols(lines[2]),
        ["prompt plain", "A prompt without arguments."]
    );
}

#[test]
fn prompt_renders_the_messages() {
    let (dir, rec) = demo_recording("call_prompt");
    let out =
        run(&dir, &["prompt", "demo", "greet", "name=Ann"]).assert_exit(0);
    assert_eq!(out.stdout, "# Greet someone by name.\n[user]\nHello, Ann!\n");
    assert_eq!(out.stderr, "");
    let gets = received(&rec, "prompts/get");
    assert_eq!(
        gets[0],
        json!({"name": "greet", "arguments": {"name": "Ann"}})
    );
}

#[test]
fn prompt_without_its_required_argument_is_a_usage_error() {
    let (dir, rec) = demo_recording("call_prompt_missing");
    let out = run(&dir, &["prompt", "demo", "greet"]).assert_exit(2);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': prompt 'greet' needs an argument: \
         missing name\n"
    );
    assert_eq!(received(&rec, "prompts/get"), Vec::<Value>::new());
}

/// A directory with server `demo`: the fixture with `--shaped-tools`.
fn shaped(test: &str) -> Dir {
    let dir = Dir::new(test);
    let server = fixture_server(&["--shaped-tools"]);
    write_mcp_json(&dir, &[("demo", server)]);
    dir
}

#[test]
fn a_result_is_printed_once() {
    let dir = shaped("call_printed_once");
    // {"result": <the text>}, as the Python SDK and fastmcp send it.
    let out =
        run(&dir, &["call", "demo", "wrapped", "text=hello"]).assert_exit(0);
    assert_eq!(out.stdout, "hello\n");
    assert_eq!(out.stderr, "");
    // Structured content whose JSON text is a text block.
    let out =
        run(&dir, &["call", "demo", "types", "s=x", "i=1"]).assert_exit(0);
    assert_eq!(out.stdout, "{\"i\":1,\"s\":\"x\"}\n");
    // Structured content that no text carries is shown after the text.
    let out =
        run(&dir, &["call", "-y", "demo", "add", "a=1", "b=2"]).assert_exit(0);
    assert_eq!(out.stdout, "3\n{\n  \"sum\": 3\n}\n");
    // --json prints the whole result.
    let out = run(&dir, &["call", "demo", "wrapped", "text=hello", "--json"])
        .assert_exit(0);
    assert_eq!(
        out.stdout_json(),
        json!({"content": [{"type": "text", "text": "hello"}],
               "structuredContent": {"result": "hello"}})
    );
}

#[test]
fn truncation_exits_8_and_save_writes_whole_files() {
    let dir = shaped("call_truncated_save");
    let args =
        ["call", "demo", "picture", "bytes:=8000", "--max-output", "1K"];
    let out = run(&dir, &args).assert_exit(8);
    assert_eq!(out.stdout, "[image: image/png, cut by --max-output]\n");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': output truncated: the result was 10731 \
         bytes, more than --max-output allows; use --max-output to see more\n"
    );
    let out = run(&dir, &args).arg("--json").assert_exit(8);
    let v = out.stdout_json();
    assert_eq!(
        (&v["truncated"], &v["original_bytes"]),
        (&json!(true), &json!(10731))
    );
    assert_eq!(v["content"][0]["data"], "");
    // --save writes the image whole: the cap is on what is printed, and
    // nothing printed is missing, so the exit is 0.
    let out = run(&dir, &args).args(["--save", "out"]).assert_exit(0);
    assert_eq!(
        out.stdout,
        "[image: image/png, 8000 bytes, saved to \
         out/demo-mcp__demo__picture-1.png]\n"
    );
    let bytes: Vec<u8> = (0..8000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(
        std::fs::read(dir.path("out/demo-mcp__demo__picture-1.png")).unwrap(),
        bytes
    );
    // A second save does not overwrite the first.
    let out = run(&dir, &args).args(["--save", "out"]).assert_exit(0);
    assert_contains(
        &out.stdout,
        "saved to out/demo-mcp__demo__picture-2.png]",
    );
}

#[test]
fn read_save_keeps_text_too_named_after_the_resource() {
    let dir = shaped("call_read_save");
    let saved = |uri: &str| -> String {
        let out =
            run(&dir, &["read", "demo", uri, "--save", "out"]).assert_exit(0);
        out.stdout
    };
    assert_eq!(
        saved("fixture://docs/readme"),
        "[text: text/plain, 5 bytes, saved to out/readme.txt]\n"
    );
    // Never overwritten: the second copy gets a number.
    assert_eq!(
        saved("fixture://docs/readme"),
        "[text: text/plain, 5 bytes, saved to out/readme-2.txt]\n"
    );
    assert_contains(&saved("fixture://docs/guide"), "saved to out/guide.md]");
    assert_eq!(
        saved("fixture://bin/blob"),
        "[blob: application/octet-stream, 256 bytes, saved to out/blob.bin]\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path("out/readme.txt")).unwrap(),
        "hello"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path("out/readme-2.txt")).unwrap(),
        "hello"
    );
    let bytes: Vec<u8> = (0..=255u8).collect();
    assert_eq!(std::fs::read(dir.path("out/blob.bin")).unwrap(), bytes);
    // A hostile URI cannot name a path outside the directory.
    let mut names: Vec<String> = std::fs::read_dir(dir.path("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["blob.bin", "guide.md", "readme-2.txt", "readme.txt"]);
}

#[test]
fn a_tool_hidden_for_a_missing_client_capability_says_which() {
    let (dir, _) = demo_recording("call_capability_gated");
    let out = run(&dir, &["call", "demo", "trigger-sampling-request"])
        .assert_exit(2);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': no tool 'trigger-sampling-request'; \
         some servers show 'trigger-sampling-request' only to clients that \
         declare the 'sampling' client capability, and hide it otherwise \
         (see: rivumi-mcp list demo)\n"
    );
    // Any other missing tool gets no such note.
    let out = run(&dir, &["call", "demo", "nope"]).assert_exit(2);
    assert_absent(&out.stderr, "capability");
}
