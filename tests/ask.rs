//! What a server may ask of the client (elicitation, sampling, roots, log
//! levels), against the fixture server's `--ask-at-call`: the tool call
//! answers with the client's responses, so stdout shows exactly what was
//! sent back. Forms on a real pseudo-terminal run through `script`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::util::oauth::write_script;
use crate::util::{
    ALLOWLIST, Dir, Output, TestCommand, assert_contains, bin, fixture_server,
    on_terminal, quote, run_allowed, sampling_model, write_mcp_json,
};

/// A form with a required integer, a string default and a boolean default.
fn form() -> Value {
    json!({"method": "elicitation/create", "params": {
        "message": "Who are you?",
        "requestedSchema": {"type": "object", "properties": {
            "age": {"type": "integer", "minimum": 0, "maximum": 150,
                    "title": "Age"},
            "name": {"type": "string", "default": "Ann"},
            "ok": {"type": "boolean", "default": true}},
          "required": ["age"]}}})
}

/// A directory whose server `demo` asks `asks` at every tool call and
/// records what it receives in `<dir>/rec`.
fn asking(test: &str, asks: &[Value]) -> Dir {
    let dir = Dir::new(test);
    let file = dir.write("asks.json", Value::from(asks.to_vec()).to_string());
    let rec = format!("--record={}", dir.path("rec").display());
    let server =
        fixture_server(&["--ask-at-call", file.to_str().unwrap(), &rec]);
    write_mcp_json(&dir, &[("demo", server)]);
    dir
}

/// `call -y demo echo text=x ARGS`, without a terminal.
fn call(dir: &Dir, args: &[&str]) -> TestCommand {
    // The options first: some run a program, which may not follow an
    // operand a server could have chosen.
    let mut all = vec!["call", "-y"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["demo", "echo", "text=x"]);
    let mut c = run_allowed(dir, "demo", &all);
    c.env_remove("RIVUMI_MCP_SAMPLING_COMMAND");
    c
}

/// The client's responses, as the tool printed them.
fn answers(out: &Output) -> Vec<Value> {
    serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {}", out.all()))
}

fn recorded(dir: &Dir) -> Vec<Value> {
    std::fs::read_to_string(dir.path("rec"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn answers_are_typed_by_the_form_and_capabilities_declared() {
    let dir = asking("ask_typed", &[form()]);
    let out = call(&dir, &["--answer", "age=40", "--answer", "name=007"])
        .assert_exit(0);
    assert_eq!(
        answers(&out),
        [json!({"action": "accept", "content": {"age": 40, "name": "007"}})]
    );
    let init = recorded(&dir)
        .into_iter()
        .find(|m| m["method"] == "initialize")
        .unwrap();
    assert_eq!(
        init["params"]["capabilities"],
        json!({"elicitation": {"form": {}, "url": {}}})
    );
}

#[test]
fn defaults_fill_the_rest_of_a_form() {
    let dir = asking("ask_defaults", &[form()]);
    let out = call(&dir, &["--elicit", "defaults", "--answer", "age=3"])
        .assert_exit(0);
    assert_eq!(
        answers(&out),
        [json!({"action": "accept",
                "content": {"age": 3, "name": "Ann", "ok": true}})]
    );
}

#[test]
fn unanswered_required_fields_decline_with_a_note_naming_them() {
    let dir = asking("ask_missing", &[form()]);
    let out = call(&dir, &["--elicit", "defaults"]).assert_exit(0);
    assert_eq!(answers(&out), [json!({"action": "decline"})]);
    assert_contains(&out.stderr, "required field(s) 'age'");
}

#[test]
fn a_value_that_fails_the_schema_is_never_sent() {
    let dir = asking("ask_invalid", &[form()]);
    let out = call(&dir, &["--answer", "age=200"]).assert_exit(0);
    assert_eq!(answers(&out), [json!({"action": "decline"})]);
    assert_contains(&out.stderr, "field 'age': must be at most 150");
    assert!(!out.stdout.contains("200"), "{}", out.stdout);
}

#[test]
fn decline_and_cancel_answer_every_form_so() {
    let dir = asking("ask_modes", &[form()]);
    for mode in ["decline", "cancel"] {
        let out = call(&dir, &["--elicit", mode, "--answer", "age=1"])
            .assert_exit(0);
        assert_eq!(answers(&out), [json!({"action": mode})]);
    }
    let out = run_allowed(&dir, "demo", &["list", "--elicit", "maybe"])
        .assert_exit(2);
    assert_contains(&out.stderr, "--elicit: unknown mode 'maybe'");
}

#[test]
fn a_nested_form_is_declined_not_half_asked() {
    let nested = json!({"method": "elicitation/create", "params": {
        "message": "x", "requestedSchema": {"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "object"}}}}});
    let dir = asking("ask_nested", &[nested]);
    let out = call(&dir, &["--answer", "a=1"]).assert_exit(0);
    assert_eq!(answers(&out), [json!({"action": "decline"})]);
    assert_contains(&out.stderr, "field 'b' is an object");
}

#[test]
fn roots_only_when_named() {
    let roots = json!({"method": "roots/list", "params": {}});
    let dir = asking("ask_roots", &[roots]);
    let out = call(&dir, &[]).assert_exit(0);
    assert_eq!(answers(&out)[0]["error"]["code"], -32601);
    let named = dir.path("my dir");
    std::fs::create_dir_all(&named).unwrap();
    let canon = std::fs::canonicalize(&named).unwrap();
    let out = call(&dir, &["--root", named.to_str().unwrap()]).assert_exit(0);
    let uri =
        format!("file://{}", canon.to_str().unwrap().replace(' ', "%20"));
    assert_eq!(
        answers(&out),
        [json!({"roots": [{"uri": uri, "name": "my dir"}]})]
    );
    let out = call(&dir, &["--root", "/no/such/dir"]).assert_exit(2);
    assert_contains(&out.stderr, "--root /no/such/dir");
}

#[test]
fn sampling_only_through_the_operators_command_and_an_approval() {
    let sampling = json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user",
                      "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 5}});
    let dir = asking("ask_sampling", &[sampling]);
    let out = call(&dir, &[]).assert_exit(0);
    assert_eq!(answers(&out)[0]["error"]["code"], -32601);
    // The command answers with how many bytes of request it was given.
    let model = write_script(
        &dir,
        "count.sh",
        "#!/bin/sh\nn=$(wc -c | tr -d ' ')\nprintf '{\"role\":\"assistant\",\
         \"model\":\"m\",\"content\":{\"type\":\"text\",\"text\":\"got %s\"}}' \
         \"$n\"\n",
    );
    let garbage =
        write_script(&dir, "garbage.sh", "#!/bin/sh\necho not json\n");
    let cmd = model.to_str().unwrap();
    // Without --yes and without a terminal, it is not approved (echo is
    // a read tool: the call itself needs no approval).
    let out = run_allowed(&dir, "demo", &["call", "demo", "echo", "text=x"])
        .env("RIVUMI_MCP_SAMPLING_COMMAND", cmd)
        .assert_exit(0);
    let r = &answers(&out)[0];
    assert_eq!(r["error"]["code"], -32603, "{r}");
    let out = call(&dir, &["--sampling-command", cmd]).assert_exit(0);
    let r = &answers(&out)[0];
    assert_eq!(r["model"], "m", "{r}");
    let request = json!({"messages": [{"role": "user",
        "content": {"type": "text", "text": "hi"}}], "maxTokens": 5});
    assert_eq!(
        r["content"]["text"],
        format!("got {}", request.to_string().len()),
        "{r}"
    );
    let out = call(&dir, &["--sampling-command", garbage.to_str().unwrap()])
        .assert_exit(0);
    let r = &answers(&out)[0];
    assert_contains(r["error"]["message"].as_str().unwrap(), "not json");
    // A command that never ends is cut off at half of --timeout; the call
    // itself still completes.
    let sleeper = write_script(&dir, "sleep.sh", "#!/bin/sh\nsleep 60\n");
    let sleeper = sleeper.to_str().unwrap();
    let started = std::time::Instant::now();
    let out = call(&dir, &["--sampling-command", sleeper, "--timeout", "4"])
        .assert_exit(0);
    assert!(started.elapsed() < Duration::from_secs(4), "{out:?}");
    let r = &answers(&out)[0];
    let e = r["error"]["message"].as_str().unwrap();
    assert_contains(e, "timed out after 2s");
    let out =
        call(&dir, &["--read-only", "--sampling-command", cmd]).assert_exit(0);
    let r = &answers(&out)[0];
    assert_contains(r["error"]["message"].as_str().unwrap(), "--read-only");
}

#[test]
fn url_mode_without_a_terminal_prints_and_declines() {
    let url = |u: &str| {
        json!({"method": "elicitation/create", "params": {
            "mode": "url", "message": "Log in", "url": u,
            "elicitationId": "e1"}})
    };
    let dir = asking(
        "ask_url",
        &[url("https://example.com/x?y=1"), url("http://u:p@example.com/")],
    );
    let out = call(&dir, &[]).assert_exit(0);
    assert_eq!(
        answers(&out),
        [json!({"action": "decline"}), json!({"action": "decline"})]
    );
    assert_contains(&out.stderr, "https://example.com/x?y=1 (Log in)");
    assert_contains(&out.stderr, "refused");
}

#[test]
fn log_level_reaches_the_server_and_its_lines_show() {
    let dir = asking("ask_log", &[]);
    let out = call(&dir, &[]).assert_exit(0);
    assert!(!out.stderr.contains("asking"), "{}", out.stderr);
    let out = call(&dir, &["--log-level", "debug"]).assert_exit(0);
    assert_contains(&out.stderr, "[demo] info: asking");
    let set: Vec<Value> = recorded(&dir)
        .into_iter()
        .filter(|m| m["method"] == "logging/setLevel")
        .collect();
    assert_eq!(set.len(), 1);
    assert_eq!(set[0]["params"], json!({"level": "debug"}));
}

#[test]
fn a_batch_line_answers_from_its_own_answers() {
    let dir = asking("ask_batch", &[form()]);
    let lines = "{\"id\": 1, \"server\": \"demo\", \"tool\": \"echo\", \
                 \"arguments\": {\"text\": \"x\"}, \"answers\": {\"age\": \"41\"}}\n\
                 {\"id\": 2, \"server\": \"demo\", \"tool\": \"echo\", \
                 \"arguments\": {\"text\": \"x\"}}\n";
    let out = run_allowed(&dir, "demo", &["batch", "-y", "--answer", "age=9"])
        .stdin(lines)
        .assert_exit(0);
    let rows: Vec<Value> =
        out.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let text = |i: usize| rows[i].to_string();
    assert_contains(&text(0), r#"\"age\":41"#);
    assert_contains(&text(1), r#"\"age\":9"#);
}

#[test]
fn a_person_answers_a_form_on_a_terminal() {
    let dir = asking("ask_tty", &[form()]);
    // age: a word and an out-of-range number are asked again; name and ok
    // take their defaults; then the summary is confirmed.
    let out = on_terminal(
        &dir,
        &["call", "-y", "demo", "echo", "text=x"],
        "abc\r200\r42\r\r\ry\r",
    );
    assert_contains(&out.stdout, "Who are you?");
    assert_contains(&out.stdout, "field 'age': must be a number");
    assert_contains(&out.stdout, "field 'age': must be at most 150");
    assert_contains(&out.stdout, "Send these answers?");
    assert_contains(
        &out.stdout,
        r#"[{"action":"accept","content":{"age":42,"name":"Ann","ok":true}}]"#,
    );
}

#[test]
fn ctrl_c_at_a_form_cancels_it() {
    let dir = asking("ask_tty_cancel", &[form()]);
    // Ctrl-C only once the question is up (before it, it is a signal that
    // ends the run, as anywhere else).
    let line = format!(
        "(sleep 2; printf '\\003') | script -qec {} /dev/null",
        quote(&format!(
            "{} call -y demo echo text=x",
            bin().to_str().unwrap()
        ))
    );
    let mut cmd = dir.program("sh");
    cmd.args(["-c", &line])
        .env(ALLOWLIST, "demo")
        .timeout(Duration::from_secs(20));
    let out = cmd.run();
    assert_contains(&out.stdout, "Who are you?");
    assert_contains(&out.stdout, r#"[{"action":"cancel"}]"#);
}

#[test]
fn a_person_consents_to_a_url_on_a_terminal() {
    let url = json!({"method": "elicitation/create", "params": {
        "mode": "url", "message": "Pay \u{1b}[31mnow", "elicitationId": "e1",
        "url": "https://pay.example.com/x?session=1"}});
    let dir = asking("ask_tty_url", &[url]);
    // The "browser" writes down what it was asked to open.
    let opened = dir.path("opened");
    let browser = write_script(
        &dir,
        "browser.sh",
        &format!("#!/bin/sh\nprintf %s \"$1\" > '{}'\n", opened.display()),
    );
    let journal = dir.path("j.jsonl");
    let line = format!(
        "RIVUMI_MCP_BROWSER={} {} call -y demo echo text=x --journal {}",
        quote(browser.to_str().unwrap()),
        quote(bin().to_str().unwrap()),
        quote(journal.to_str().unwrap())
    );
    let mut cmd = dir.program("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env(ALLOWLIST, "demo")
        .stdin("y\r")
        .timeout(Duration::from_secs(20));
    let out = cmd.run();
    assert_contains(&out.stdout, "host: \u{1b}[1mpay.example.com\u{1b}[0m");
    assert_contains(&out.stdout, "Pay \\x1b[31mnow");
    assert_contains(&out.stdout, r#"[{"action":"accept"}]"#);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !opened.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        std::fs::read_to_string(&opened).unwrap(),
        "https://pay.example.com/x?session=1"
    );
    // The journal records the consent (never the URL's values).
    let events = std::fs::read_to_string(&journal).unwrap();
    let asked: Vec<&str> =
        events.lines().filter(|l| l.contains("\"server_request\"")).collect();
    assert_eq!(asked.len(), 1, "{events}");
    assert_contains(asked[0], r#""action":"accept""#);
    // "no": declined, nothing opened.
    std::fs::remove_file(&opened).unwrap();
    cmd.stdin("n\r");
    let out = cmd.run();
    assert_contains(&out.stdout, r#"[{"action":"decline"}]"#);
    std::thread::sleep(Duration::from_millis(200));
    assert!(!opened.exists());
}

#[test]
fn sampling_is_approved_at_the_terminal() {
    let sampling = json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user",
                      "content": {"type": "text", "text": "Say hi"}}],
        "maxTokens": 5}});
    let dir = asking("ask_tty_sampling", &[sampling]);
    let model = sampling_model(&dir, "m", "hi");
    let model = model.to_str().unwrap();
    let args = ["call", "--sampling-command", model, "demo", "echo", "text=x"];
    let out = on_terminal(&dir, &args, "y\r");
    assert_contains(&out.stdout, "asks for a model completion");
    assert_contains(&out.stdout, "  user: Say hi\n");
    assert_contains(&out.stdout, r#""model":"m""#);
    let out = on_terminal(&dir, &args, "n\r");
    assert_contains(&out.stdout, "sampling was not approved");
}

#[test]
fn progress_is_one_updating_line_on_a_terminal_only() {
    let dir = asking("ask_progress", &[]);
    write_mcp_json(&dir, &[("demo", fixture_server(&[]))]);
    let args = ["call", "-y", "demo", "slow", "ms=400"];
    let out = on_terminal(&dir, &args, "");
    assert_contains(&out.stdout, "\r\u{1b}[K[demo] step 1 of 3 1/3 (");
    // The last one is erased before the result is printed.
    let last = out.stdout.find("[demo] step 3 of 3 3/3 (").unwrap();
    let rest = &out.stdout[last..];
    let erased = rest.find("s)\r\u{1b}[K").unwrap();
    assert!(!rest[..erased].contains('\n'), "{rest:?}");
    let out = run_allowed(&dir, "demo", &args).assert_exit(0);
    assert_eq!(out.stderr, "");
    let out = on_terminal(&dir, &[&args[..], &["-q"]].concat(), "");
    assert!(!out.stdout.contains("step 1"), "{:?}", out.stdout);
}

#[test]
fn a_form_is_asked_in_the_order_its_schema_lists_the_fields() {
    // A server that writes its form by hand, fields out of alphabetical
    // order, and records the answer it gets.
    let dir = Dir::new("ask_tty_order");
    let rec = dir.path("reply");
    let script = format!(
        r#"#!/bin/sh
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{{"jsonrpc":"2.0","id":%s,"result":{{"protocolVersion":"2025-11-25","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"s","version":"1"}}}}}}\n' "$id" ;;
    *'"method":"tools/list"'*)
      printf '{{"jsonrpc":"2.0","id":%s,"result":{{"tools":[{{"name":"t","inputSchema":{{"type":"object"}},"annotations":{{"readOnlyHint":true}}}}]}}}}\n' "$id" ;;
    *'"method":"tools/call"'*)
      printf '{{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{{"message":"In order?","requestedSchema":{{"type":"object","properties":{{"zeta":{{"type":"string"}},"alpha":{{"type":"string"}}}},"required":["zeta","alpha"]}}}}}}\n'
      IFS= read -r reply
      printf '%s\n' "$reply" > '{}'
      printf '{{"jsonrpc":"2.0","id":%s,"result":{{"content":[{{"type":"text","text":"ok"}}]}}}}\n' "$id" ;;
  esac
done
"#,
        rec.display()
    );
    let server = write_script(&dir, "server.sh", &script);
    write_mcp_json(&dir, &[("demo", json!({"command": server}))]);
    // The first answer goes to the first field the schema lists: zeta.
    let out = on_terminal(&dir, &["call", "demo", "t"], "Z\rA\ry\r");
    assert_contains(&out.stdout, "In order?");
    let reply: Value =
        serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    assert_eq!(
        reply["result"],
        json!({"action": "accept", "content": {"zeta": "Z", "alpha": "A"}}),
        "{out:?}"
    );
}

#[test]
fn a_long_form_message_is_counted_not_cut_silently() {
    let message: String = (1..=25).map(|i| format!("line {i}\n")).collect();
    let long = json!({"method": "elicitation/create", "params": {
        "message": message,
        "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "default": "Ann"}}}}});
    let dir = asking("ask_tty_long_message", &[long]);
    let out =
        on_terminal(&dir, &["call", "-y", "demo", "echo", "text=x"], "\ry\r");
    assert_contains(&out.stdout, "line 20");
    assert_contains(&out.stdout, "(5 more lines)");
    assert!(!out.stdout.contains("line 21"), "{out:?}");
}
