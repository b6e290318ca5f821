//! `serve`: the gateway driven by a host written here (JSON-RPC lines on
//! its stdin and stdout) and by `rivumi-mcp` itself through two hops, in
//! front of the fixture server: names, both eras, approval asked of the
//! host, refusals as `isError` results that never reach the server, the
//! lock, the journal, forwarded server requests, a crashing upstream,
//! end of input, and the HTTP front's checks.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{
    ALLOWLIST, Dir, TestCommand, bin, fixture_server, read_pids, received,
    run_allowed, write_mcp_json,
};

/// How long the host waits for one answer.
const WAIT: Duration = Duration::from_secs(20);

/// A host: `rivumi-mcp serve ARGS` with its pipes.
struct Host {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    next: u64,
    /// How the host answers `elicitation/create`: accept or decline.
    pub accept: bool,
    /// Requests the gateway made of the host.
    pub asked: Vec<Value>,
    /// Notifications the gateway sent.
    pub notes: Vec<Value>,
}

impl Host {
    fn start(dir: &Dir, allow: &str, args: &[&str]) -> Host {
        let mut all = vec!["serve"];
        all.extend_from_slice(args);
        let mut cmd = run_allowed(dir, allow, &all);
        cmd.env("RIVUMI_MCP_JOURNAL", dir.path("journal.jsonl"));
        let mut child = cmd.spawn();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value =
                    serde_json::from_str(&line).unwrap_or_else(|e| {
                        panic!("not JSON on stdout ({e}): {line}")
                    });
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Host {
            child,
            stdin,
            lines: rx,
            next: 1,
            accept: true,
            asked: vec![],
            notes: vec![],
        }
    }

    fn send(&mut self, m: &Value) {
        let w = self.stdin.as_mut().expect("stdin open");
        writeln!(w, "{m}").unwrap();
        w.flush().unwrap();
    }

    /// Sends a request and waits for its answer, answering what the
    /// gateway asks meanwhile.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let m = self
                .lines
                .recv_timeout(WAIT)
                .unwrap_or_else(|e| panic!("no answer to {method}: {e}"));
            if m.get("method").is_some() && m.get("id").is_some() {
                self.asked.push(m.clone());
                let action = if self.accept { "accept" } else { "decline" };
                let mut result = json!({"action": action});
                if action == "accept" {
                    result["content"] = json!({});
                }
                if m["method"] == "roots/list" {
                    result = json!({"roots": [{"uri": "file:///host-root"}]});
                }
                self.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": result}));
                continue;
            }
            if m.get("id") == Some(&json!(id)) {
                return m;
            }
            if m.get("method").is_some() {
                self.notes.push(m);
            }
        }
    }

    fn initialize(&mut self, caps: Value) -> Value {
        let r = self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": caps,
                   "clientInfo": {"name": "test-host", "version": "1"}}),
        );
        self.send(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        r
    }

    fn call(&mut self, name: &str, args: Value) -> Value {
        let r = self
            .request("tools/call", json!({"name": name, "arguments": args}));
        r.get("result").cloned().unwrap_or_else(|| panic!("no result: {r}"))
    }

    /// Closes stdin and waits for the exit code.
    fn finish(mut self) -> Option<i32> {
        drop(self.stdin.take());
        for _ in 0..400 {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let _ = self.child.kill();
        panic!("serve did not exit at end of input");
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or("").to_string()
}

fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}

/// A directory whose server `demo` is the fixture, recording in `rec`
/// and writing its pid to `pids`, with `args`.
/// Makes `dir`'s server `demo` the fixture asking `asks` (a JSON array of
/// requests) at every tool call.
pub(crate) fn asking(dir: &Dir, asks: &Value) {
    let file = dir.write("asks.json", asks.to_string());
    let server = fixture_server(&["--ask-at-call", file.to_str().unwrap()]);
    write_mcp_json(dir, &[("demo", server)]);
}

pub(crate) fn demo(test: &str, args: &[&str]) -> Dir {
    let dir = Dir::new(test);
    let rec = format!("--record={}", dir.path("rec").display());
    let pids = format!("--pid-file={}", dir.path("pids").display());
    let mut all = vec![rec.as_str(), pids.as_str()];
    all.extend_from_slice(args);
    write_mcp_json(&dir, &[("demo", fixture_server(&all))]);
    dir
}

fn journal(dir: &Dir) -> Vec<Value> {
    std::fs::read_to_string(dir.path("journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn events<'a>(j: &'a [Value], kind: &str) -> Vec<&'a Value> {
    j.iter().filter(|e| e["event"] == kind).collect()
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[test]
fn the_host_sees_prefixed_names_and_calls_go_through() {
    let dir = demo("serve_names", &[]);
    let mut h = Host::start(&dir, "demo", &[]);
    let init = h.initialize(json!({}));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);
    let tools = h.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"demo__echo"), "{names:?}");
    assert!(names.iter().all(|n| n.len() <= 64 && n.starts_with("demo__")));
    // Schemas and annotations are passed through.
    let echo = &tools["result"]["tools"][0];
    assert_eq!(echo["inputSchema"]["properties"]["text"]["type"], "string");
    assert_eq!(echo["annotations"]["readOnlyHint"], true);
    let r = h.call("demo__echo", json!({"text": "through"}));
    assert_eq!(text(&r), "through");
    let res = h.request("resources/list", json!({}));
    let uri = &res["result"]["resources"][0];
    assert_eq!(uri["_meta"]["dev.rivumi-mcp/server"], "demo");
    let read =
        h.request("resources/read", json!({"uri": "fixture://docs/readme"}));
    assert!(read["result"]["contents"][0]["text"].is_string(), "{read}");
    // A URI of a template is read from the server whose template it is.
    let read =
        h.request("resources/read", json!({"uri": "fixture://docs/guide"}));
    assert!(read["result"]["contents"].is_array(), "{read}");
    let p = h.request(
        "prompts/get",
        json!({"name": "demo__greet", "arguments": {"name": "Ada"}}),
    );
    assert!(
        p["result"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Ada")
    );
    let unknown = h.request("nope/nope", json!({}));
    assert_eq!(unknown["error"]["code"], -32601);
    assert_eq!(h.finish(), Some(0));
}

#[test]
fn approval_is_asked_of_the_host_and_a_decline_never_reaches_the_server() {
    let dir = demo("serve_approval", &[]);
    let mut h = Host::start(&dir, "demo", &[]);
    h.initialize(json!({"elicitation": {}}));
    let r = h.call("demo__delete_all", json!({}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(h.asked.len(), 1);
    let form = &h.asked[0]["params"];
    let message = form["message"].as_str().unwrap();
    assert!(message.contains("tool: demo__delete_all"), "{message}");
    assert!(message.contains("classification: execute"), "{message}");
    h.accept = false;
    let r = h.call("demo__delete_all", json!({}));
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("not approved by the host"), "{r}");
    assert_eq!(h.finish(), Some(0));
    // One call reached the server: the approved one.
    assert_eq!(received(&dir.path("rec"), "tools/call").len(), 1);
    let j = journal(&dir);
    let approvals = events(&j, "approval_decision");
    assert_eq!(approvals.len(), 2);
    assert_eq!(approvals[0]["approved"], true);
    assert_eq!(approvals[0]["how"], "host");
    assert_eq!(approvals[1]["approved"], false);
}

#[test]
fn without_elicitation_execute_is_denied_unless_approved_at_start() {
    let dir = demo("serve_no_elicitation", &[]);
    let mut h = Host::start(&dir, "demo", &[]);
    h.initialize(json!({}));
    let r = h.call("demo__delete_all", json!({}));
    assert!(is_error(&r));
    assert!(text(&r).contains("--approve mcp__demo__delete_all"), "{r}");
    // A read tool needs no approval.
    assert!(!is_error(&h.call("demo__echo", json!({"text": "x"}))));
    assert_eq!(h.finish(), Some(0));
    assert_eq!(received(&dir.path("rec"), "tools/call").len(), 1);

    let mut h =
        Host::start(&dir, "demo", &["--approve", "mcp__demo__delete_*"]);
    h.initialize(json!({}));
    assert!(!is_error(&h.call("demo__delete_all", json!({}))));
    assert!(is_error(&h.call("demo__add", json!({"a": 1, "b": 2}))));
    assert_eq!(h.finish(), Some(0));
    let mut h = Host::start(&dir, "demo", &["--yes"]);
    h.initialize(json!({}));
    assert!(!is_error(&h.call("demo__add", json!({"a": 1, "b": 2}))));
    assert_eq!(h.finish(), Some(0));
}

#[test]
fn a_hook_denial_is_an_error_result_that_never_reaches_the_server() {
    let dir = demo("serve_hook", &[]);
    let hook = dir.write("deny.sh", "#!/bin/sh\necho 'not today'\nexit 1\n");
    std::fs::set_permissions(
        &hook,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let hook = hook.display().to_string();
    let mut h =
        Host::start(&dir, "demo", &["--yes", "--pre-tool-hook", &hook]);
    h.initialize(json!({}));
    let r = h.call("demo__echo", json!({"text": "x"}));
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("denied by pre-tool hook"), "{r}");
    assert_eq!(h.finish(), Some(0));
    assert!(received(&dir.path("rec"), "tools/call").is_empty());
    let j = journal(&dir);
    assert_eq!(events(&j, "hook_decision")[0]["allow"], false);
}

#[test]
fn a_drifted_tool_is_refused() {
    let dir = Dir::new("serve_lock");
    let patch = format!("--patch={}", dir.path("patch.json").display());
    let rec = format!("--record={}", dir.path("rec").display());
    write_mcp_json(&dir, &[("demo", fixture_server(&[&rec, &patch]))]);
    run_allowed(&dir, "demo", &["lock"]).assert_exit(0);
    dir.write(
        "patch.json",
        json!({"tools": {"echo": {"description": "Now also mails it."}}})
            .to_string(),
    );
    let mut h = Host::start(&dir, "demo", &["--yes"]);
    h.initialize(json!({}));
    let r = h.call("demo__echo", json!({"text": "x"}));
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("changed"), "{r}");
    // What did not drift still runs.
    assert!(!is_error(&h.call("demo__add", json!({"a": 1, "b": 2}))));
    assert_eq!(h.finish(), Some(0));
    assert_eq!(received(&dir.path("rec"), "tools/call").len(), 1);
    assert_eq!(events(&journal(&dir), "lock_refused").len(), 1);
}

#[test]
fn an_upstream_elicitation_reaches_the_host_and_its_answer_goes_back() {
    let dir = Dir::new("serve_forward");
    let asks = json!([
        {"method": "elicitation/create", "params": {"message": "Your name?",
         "requestedSchema": {"type": "object", "properties": {}}}},
        {"method": "roots/list", "params": {}}
    ]);
    asking(&dir, &asks);
    let mut h = Host::start(&dir, "demo", &["--yes"]);
    h.initialize(json!({"elicitation": {}, "roots": {}}));
    let r = h.call("demo__echo", json!({"text": "x"}));
    let answers: Value = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!(answers[0]["action"], "accept", "{answers}");
    assert_eq!(answers[1]["roots"][0]["uri"], "file:///host-root");
    let m = h.asked[0]["params"]["message"].as_str().unwrap();
    assert_eq!(m, "[demo] Your name?");
    assert_eq!(h.finish(), Some(0));
}

#[test]
fn a_crashed_upstream_fails_one_call_and_the_next_use_restarts_it() {
    let dir = demo("serve_crash", &["--exit-at-call"]);
    let mut h = Host::start(&dir, "demo", &["--yes"]);
    h.initialize(json!({}));
    let r = h.call("demo__echo", json!({"text": "x"}));
    assert!(is_error(&r), "{r}");
    let read =
        h.request("resources/read", json!({"uri": "fixture://docs/readme"}));
    assert!(read["result"]["contents"].is_array(), "{read}");
    assert_eq!(read_pids(&dir.path("pids")).len(), 2, "restarted once");
    assert_eq!(h.finish(), Some(0));
}

#[test]
fn end_of_input_closes_every_upstream() {
    let dir = Dir::new("serve_eof");
    let pids = |n: &str| format!("--pid-file={}", dir.path(n).display());
    write_mcp_json(
        &dir,
        &[
            ("a", fixture_server(&[&pids("a")])),
            ("b", fixture_server(&[&pids("b")])),
        ],
    );
    let mut h = Host::start(&dir, "a,b", &[]);
    h.initialize(json!({}));
    let tools = h.request("tools/list", json!({}));
    assert_eq!(tools["result"]["tools"][0]["name"], "a__echo");
    let all: Vec<u32> =
        ["a", "b"].iter().flat_map(|n| read_pids(&dir.path(n))).collect();
    assert_eq!(all.len(), 2);
    assert!(all.iter().all(|p| alive(*p)));
    assert_eq!(h.finish(), Some(0));
    assert!(all.iter().all(|p| !alive(*p)), "a server outlived serve");
}

#[test]
fn modern_requests_are_answered_in_their_era() {
    let dir = demo("serve_modern", &[]);
    let mut h = Host::start(&dir, "demo", &[]);
    let meta = |caps: Value| {
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": caps,
               "io.modelcontextprotocol/clientInfo": {"name": "h", "version": "1"}})
    };
    let d = h.request("server/discover", json!({"_meta": meta(json!({}))}));
    assert_eq!(d["result"]["supportedVersions"][0], "2026-07-28");
    let t = h.request("tools/list", json!({"_meta": meta(json!({}))}));
    assert_eq!(t["result"]["resultType"], "complete");
    assert!(
        t["result"]["_meta"]["io.modelcontextprotocol/serverInfo"].is_object()
    );
    // Approval is an input_required round, retried with the answer.
    let params = json!({"name": "demo__delete_all", "arguments": {},
                        "_meta": meta(json!({"elicitation": {}}))});
    let r = h.request("tools/call", params.clone());
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let state = r["result"]["requestState"].clone();
    let mut retry = params.clone();
    retry["requestState"] = state.clone();
    retry["inputResponses"] =
        json!({"rivumi-approval": {"action": "accept", "content": {}}});
    let r = h.request("tools/call", retry);
    assert_eq!(text(&r["result"]), "deleted", "{r}");
    // An answer for other arguments approves nothing.
    let mut other = params.clone();
    other["arguments"] = json!({"x": 1});
    other["requestState"] = state;
    other["inputResponses"] = json!({"rivumi-approval": {"action": "accept"}});
    let r = h.request("tools/call", other);
    assert!(is_error(&r["result"]), "{r}");
    let bad = h.request(
        "tools/list",
        json!({"_meta":
        {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}}),
    );
    assert_eq!(bad["error"]["code"], -32022);
    assert_eq!(h.finish(), Some(0));
    assert_eq!(received(&dir.path("rec"), "tools/call").len(), 1);
}

/// `.mcp.json` for `rivumi-mcp` as the host: one server `gw`, which is
/// `rivumi-mcp serve` in front of `inner` (its allowlist `demo`).
fn two_hops(dir: &Dir, extra: &[&str]) {
    let inner = dir.write(
        "inner/.mcp.json",
        json!({"mcpServers": {"demo": fixture_server(&[])}}).to_string(),
    );
    let mut args = vec![
        format!("{ALLOWLIST}=demo"),
        bin().display().to_string(),
        "serve".into(),
        "-c".into(),
        inner.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    write_mcp_json(dir, &[("gw", json!({"command": "env", "args": args}))]);
}

#[test]
fn rivumi_mcp_is_a_host_of_serve_in_both_eras() {
    let dir = Dir::new("serve_two_hops");
    two_hops(&dir, &[]);
    for era in ["legacy", "modern"] {
        let run = |args: &[&str]| {
            let mut all = vec!["--protocol", era];
            all.extend_from_slice(args);
            run_allowed(&dir, "gw", &all)
        };
        let out = run(&["list", "gw", "--json"]).assert_exit(0);
        let v = out.stdout_json();
        let names = v.to_string();
        assert!(names.contains("mcp__gw__demo__echo"), "{era}: {names}");
        let out =
            run(&["call", "gw", "demo__echo", "text=two hops"]).assert_exit(0);
        assert_eq!(out.stdout.trim(), "two hops", "{era}");
        let out = run(&["read", "gw", "fixture://docs/readme"]).assert_exit(0);
        assert!(!out.stdout.is_empty(), "{era}");
        prompt_and_approval(&run, era);
    }
}

/// Through `gw` (serve): a prompt, then an execute tool approved by the
/// outer client's answer to the form, then declined.
fn prompt_and_approval(run: &dyn Fn(&[&str]) -> TestCommand, era: &str) {
    let out = run(&["prompt", "gw", "demo__greet", "name=Ada"]).assert_exit(0);
    assert!(out.stdout.contains("Ada"), "{era}: {}", out.stdout);
    let approve =
        ["call", "-y", "--elicit", "defaults", "gw", "demo__delete_all"];
    let out = run(&approve).assert_exit(0);
    assert_eq!(out.stdout.trim(), "deleted", "{era}");
    let decline =
        ["call", "-y", "--elicit", "decline", "gw", "demo__delete_all"];
    let out = run(&decline).assert_exit(1);
    assert!(
        out.stdout.contains("not approved by the host"),
        "{era}: {}",
        out.all()
    );
}

#[test]
fn dry_run_shows_what_would_be_exposed() {
    let dir = demo("serve_dry_run", &[]);
    let out =
        run_allowed(&dir, "demo", &["serve", "--dry-run"]).assert_exit(0);
    assert!(out.stdout.contains("demo__echo (read)"), "{}", out.stdout);
    assert!(out.stdout.contains("demo__delete_all (execute)"));
    assert!(out.stdout.contains("fixture://docs/readme"));
    let out = run_allowed(&dir, "demo", &["serve", "--dry-run", "--json"])
        .assert_exit(0);
    assert_eq!(out.stdout_json()["tools"][0]["name"], "demo__echo");
    // Nothing allowed: refused, as list is.
    run_allowed(&dir, "", &["serve", "--dry-run"]).assert_exit(3);
    let out = run_allowed(&dir, "demo", &["serve", "--approve", "echo"])
        .assert_exit(2);
    assert!(
        out.stderr.contains("qualified tool name pattern"),
        "{}",
        out.stderr
    );
}

/// `rivumi-mcp serve --listen 127.0.0.1:0 ARGS`, its address and token
/// read from its stderr.
pub(crate) struct Listening {
    child: Child,
    pub(crate) addr: String,
    pub(crate) token: String,
}

impl Listening {
    pub(crate) fn start(
        dir: &Dir,
        allow: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Listening {
        let mut all = vec!["serve", "--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let mut cmd = run_allowed(dir, allow, &all);
        cmd.env("RIVUMI_MCP_JOURNAL", dir.path("journal.jsonl"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let mut addr = String::new();
        let mut token = env
            .iter()
            .find(|(k, _)| *k == "MY_TOKEN")
            .map(|(_, v)| v.to_string())
            .unwrap_or_default();
        while addr.is_empty() || token.is_empty() {
            let line =
                rx.recv_timeout(WAIT).expect("serve printed its address");
            if let Some(a) = line.strip_prefix("serve: listening on http://") {
                addr = a.trim_end_matches("/mcp").to_string();
            }
            if let Some(t) = line.strip_prefix("serve: bearer token: ") {
                token = t.to_string();
            }
        }
        Listening { child, addr, token }
    }

    /// One raw HTTP request; the status and the body.
    fn post(&self, headers: &[String], body: &str) -> (u16, String) {
        use std::io::Read;
        let mut head = "POST /mcp HTTP/1.1\r\n".to_string();
        if !headers.iter().any(|h| h.starts_with("Content-Length")) {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        let mut s = send(&self.addr, head, headers, body);
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        let status = out.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
        (status, out)
    }

    fn host(&self) -> String {
        format!("Host: {}", self.addr)
    }

    fn auth(&self) -> String {
        format!("Authorization: Bearer {}", self.token)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

#[test]
fn the_http_front_refuses_missing_and_wrong_tokens_foreign_hosts_and_origins()
{
    let dir = demo("serve_http_checks", &[]);
    let l = Listening::start(&dir, "demo", &[], &[]);
    assert_eq!(l.token.len(), 64, "256 bits in hex");
    let json = "Content-Type: application/json".to_string();
    let (status, body) = l.post(&[l.host(), l.auth(), json.clone()], INIT);
    assert_eq!(status, 200, "{body}");
    let sid = body
        .lines()
        .find_map(|h| h.strip_prefix("Mcp-Session-Id: "))
        .expect("a session id");
    assert_eq!(sid.len(), 32, "128 bits in hex");
    assert!(!body.to_ascii_lowercase().contains("access-control"), "{body}");
    let (status, body) = l.post(&[l.host(), json.clone()], INIT);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("WWW-Authenticate: Bearer"));
    let wrong = format!("Authorization: Bearer {}x", l.token);
    assert_eq!(l.post(&[l.host(), wrong], INIT).0, 401);
    let foreign = "Host: evil.example:80".to_string();
    assert_eq!(l.post(&[foreign, l.auth()], INIT).0, 403);
    let origin = "Origin: https://evil.example".to_string();
    assert_eq!(l.post(&[l.host(), l.auth(), origin], INIT).0, 403);
    // A session id nobody was given.
    let bogus = "Mcp-Session-Id: 00000000000000000000000000000000".to_string();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    assert_eq!(l.post(&[l.host(), l.auth(), bogus], list).0, 404);
    let big = format!("Content-Length: {}", 5 << 20);
    assert_eq!(l.post(&[l.host(), l.auth(), big], "").0, 413);
    let j = journal(&dir);
    let refused = events(&j, "serve_refused");
    assert_eq!(refused.len(), 6, "{refused:?}");
    // The token is never journalled.
    assert!(
        !std::fs::read_to_string(dir.path("journal.jsonl"))
            .unwrap()
            .contains(&l.token)
    );
}

#[test]
fn the_http_front_binds_loopback_only_and_takes_a_named_token() {
    let dir = demo("serve_http_bind", &[]);
    let out =
        run_allowed(&dir, "demo", &["serve", "--listen", "0.0.0.0:8931"])
            .assert_exit(2);
    assert!(out.stderr.contains("not a loopback address"), "{}", out.stderr);
    let out = run_allowed(
        &dir,
        "demo",
        &["serve", "--listen", "127.0.0.1:1", "--token-env", "UNSET_VAR"],
    )
    .assert_exit(2);
    assert!(out.stderr.contains("--token-env UNSET_VAR"), "{}", out.stderr);
    let l = Listening::start(
        &dir,
        "demo",
        &["--token-env", "MY_TOKEN"],
        &[("MY_TOKEN", "a-token-of-twenty-chars")],
    );
    assert_eq!(l.post(&[l.host(), l.auth()], INIT).0, 200);
}

#[test]
fn rivumi_mcp_is_a_host_of_serve_over_http_in_both_eras() {
    let dir = demo("serve_http_two_hops", &[]);
    let l = Listening::start(&dir, "demo", &[], &[]);
    let host = Dir::new("serve_http_two_hops_host");
    write_mcp_json(
        &host,
        &[(
            "gw",
            json!({"url": format!("http://{}/mcp", l.addr), "bearer_token_env_var": "GW_TOKEN"}),
        )],
    );
    for era in ["legacy", "modern"] {
        let run = |args: &[&str]| {
            let mut all = vec!["--protocol", era];
            all.extend_from_slice(args);
            let mut c = run_allowed(&host, "gw", &all);
            c.env("GW_TOKEN", &l.token);
            c
        };
        let out = run(&["call", "gw", "demo__echo", "text=over http"])
            .assert_exit(0);
        assert_eq!(out.stdout.trim(), "over http", "{era}");
        prompt_and_approval(&run, era);
    }
    assert_eq!(received(&dir.path("rec"), "tools/call").len(), 4);
    // One upstream process served every request.
    assert_eq!(read_pids(&dir.path("pids")).len(), 1);
}

#[test]
fn a_changed_upstream_list_is_told_to_the_host_and_listed_anew() {
    let dir = demo("serve_list_changed", &["--tools-after-change"]);
    let mut h = Host::start(&dir, "demo", &["--yes"]);
    h.initialize(json!({}));
    let before = h.request("tools/list", json!({}));
    assert!(!before.to_string().contains("demo__added_later"));
    let r = h.call("demo__log_and_notify", json!({}));
    assert_eq!(text(&r), "notified");
    let changed: Vec<&Value> = h
        .notes
        .iter()
        .filter(|n| n["method"] == "notifications/tools/list_changed")
        .collect();
    assert_eq!(changed.len(), 1, "{:?}", h.notes);
    let after = h.request("tools/list", json!({}));
    assert!(after.to_string().contains("demo__added_later"), "{after}");
    assert_eq!(h.finish(), Some(0));
}

#[test]
fn upstream_progress_and_logs_reach_the_host() {
    let dir = demo("serve_progress", &[]);
    let mut h = Host::start(&dir, "demo", &["--yes"]);
    h.initialize(json!({}));
    let r = h.request(
        "tools/call",
        json!({"name": "demo__slow", "arguments": {"ms": 40},
               "_meta": {"progressToken": "host-token"}}),
    );
    assert!(!is_error(&r["result"]), "{r}");
    let progress: Vec<&Value> = h
        .notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{:?}", h.notes);
    assert_eq!(progress[0]["params"]["progressToken"], "host-token");
    assert_eq!(progress[2]["params"]["message"], "step 3 of 3");
    h.call("demo__log_and_notify", json!({}));
    let log = h
        .notes
        .iter()
        .find(|n| n["method"] == "notifications/message")
        .expect("a log message");
    assert_eq!(log["params"]["logger"], "demo");
    assert_eq!(log["params"]["data"], "hello from fixture");
    assert_eq!(h.finish(), Some(0));
}

#[test]
fn a_server_that_cannot_start_is_left_out_and_the_others_serve() {
    let dir = Dir::new("serve_one_broken");
    write_mcp_json(
        &dir,
        &[
            ("good", fixture_server(&[])),
            ("bad", fixture_server(&["--crash-at-init"])),
        ],
    );
    let mut h = Host::start(&dir, "good,bad", &[]);
    let init = h.initialize(json!({}));
    assert_eq!(init["result"]["serverInfo"]["name"], "rivumi-mcp-serve");
    let tools = h.request("tools/list", json!({}));
    let names = tools["result"]["tools"].to_string();
    assert!(
        names.contains("good__echo") && !names.contains("bad__"),
        "{names}"
    );
    let r = h.call("bad__echo", json!({"text": "x"}));
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("server 'bad'"), "{r}");
    assert_eq!(text(&h.call("good__echo", json!({"text": "ok"}))), "ok");
    assert_eq!(h.finish(), Some(0));
}

#[test]
fn an_upstream_question_reaches_a_modern_host_as_an_input_required_round() {
    let dir = Dir::new("serve_modern_forward");
    let asks = json!([{"method": "elicitation/create", "params": {
        "message": "Your name?",
        "requestedSchema": {"type": "object", "properties": {}}}}]);
    asking(&dir, &asks);
    let mut h = Host::start(&dir, "demo", &["--yes"]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "h", "version": "1"}});
    let params = json!({"name": "demo__echo", "arguments": {"text": "x"}, "_meta": meta});
    let r = h.request("tools/call", params.clone());
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    let q = &result["inputRequests"]["rivumi-upstream"];
    assert_eq!(q["method"], "elicitation/create", "{r}");
    assert_eq!(q["params"]["message"], "[demo] Your name?");
    let state = result["requestState"].clone();
    let mut retry = params.clone();
    retry["requestState"] = state.clone();
    retry["inputResponses"] =
        json!({"rivumi-upstream": {"action": "accept", "content": {}}});
    let r = h.request("tools/call", retry.clone());
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    let answers: Value = serde_json::from_str(&text(&r["result"])).unwrap();
    assert_eq!(answers[0]["action"], "accept", "{answers}");
    // The state is spent.
    let again = h.request("tools/call", retry);
    assert_eq!(again["error"]["code"], -32602, "{again}");
    assert_eq!(h.finish(), Some(0));
}

/// The lines a fixture run with `--record` received, whole.
fn recorded(dir: &Dir) -> Vec<Value> {
    std::fs::read_to_string(dir.path("rec"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Waits until the fixture recorded a message matching `f`.
fn wait_recorded(dir: &Dir, what: &str, f: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..400 {
        if let Some(m) = recorded(dir).into_iter().find(&f) {
            return m;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("the upstream never received {what}: {:?}", recorded(dir));
}

#[test]
fn a_host_cancellation_reaches_the_upstream_and_gets_no_response() {
    let dir = demo("serve_cancel", &[]);
    let mut h = Host::start(&dir, "demo", &["--yes"]);
    h.initialize(json!({}));
    h.send(&json!({"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call",
                   "params": {"name": "demo__slow", "arguments": {"ms": 1500}}}));
    let call =
        wait_recorded(&dir, "the call", |m| m["method"] == "tools/call");
    h.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": "slow-1", "reason": "user"}}));
    let cancel = wait_recorded(&dir, "the cancellation", |m| {
        m["method"] == "notifications/cancelled"
    });
    // The upstream's own id, not the host's.
    assert_eq!(cancel["params"]["requestId"], call["id"], "{cancel}");
    // The next request is answered; the cancelled one never is (the
    // upstream's late answer is dropped).
    let r = h.call("demo__echo", json!({"text": "after"}));
    assert_eq!(text(&r), "after");
    std::thread::sleep(Duration::from_millis(300));
    while let Ok(m) = h.lines.try_recv() {
        assert_ne!(m.get("id"), Some(&json!("slow-1")), "{m}");
    }
    // An unknown id is ignored.
    h.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 999}}));
    assert_eq!(text(&h.call("demo__echo", json!({"text": "x"}))), "x");
    assert_eq!(h.finish(), Some(0));
    let j = journal(&dir);
    let cancelled = events(&j, "serve_cancelled");
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0]["by"], "host");
}

/// The 2026-07-28 `_meta` of a host request, with `extra` keys.
fn modern_meta(extra: Value) -> Value {
    let mut m = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "h", "version": "1"}});
    if let (Some(m), Some(e)) = (m.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    m
}

#[test]
fn modern_hosts_get_progress_and_the_logs_they_asked_for_on_stdio() {
    let dir = demo("serve_modern_progress", &[]);
    let mut h = Host::start(&dir, "demo", &["--yes"]);
    let r = h.request(
        "tools/call",
        json!({"name": "demo__slow", "arguments": {"ms": 40},
               "_meta": modern_meta(json!({"progressToken": 7}))}),
    );
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    let progress: Vec<&Value> = h
        .notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{:?}", h.notes);
    assert_eq!(progress[0]["params"]["progressToken"], 7);
    // No log level in the request: no log messages.
    h.request(
        "tools/call",
        json!({"name": "demo__log_and_notify", "arguments": {},
               "_meta": modern_meta(json!({}))}),
    );
    let logs = |h: &Host| {
        h.notes
            .iter()
            .filter(|n| n["method"] == "notifications/message")
            .count()
    };
    assert_eq!(logs(&h), 0, "{:?}", h.notes);
    // "error" is above the fixture's "info": still none; "debug" lets it.
    for (level, want) in [("error", 0), ("debug", 1)] {
        let meta = json!({"io.modelcontextprotocol/logLevel": level});
        h.request(
            "tools/call",
            json!({"name": "demo__log_and_notify", "arguments": {},
                   "_meta": modern_meta(meta)}),
        );
        assert_eq!(logs(&h), want, "{level}: {:?}", h.notes);
    }
    assert_eq!(h.finish(), Some(0));
}

impl Listening {
    /// Sends one raw HTTP POST and returns the open connection.
    fn open(&self, headers: &[String], body: &str) -> std::net::TcpStream {
        let length = format!("Content-Length: {}", body.len());
        let mut all = vec![length];
        all.extend_from_slice(headers);
        self.raw("POST", &all, body)
    }

    /// Sends one raw HTTP request (with our `Host` and token) and returns
    /// the open connection.
    fn raw(
        &self,
        method: &str,
        headers: &[String],
        body: &str,
    ) -> std::net::TcpStream {
        let head = format!(
            "{method} /mcp HTTP/1.1\r\n{}\r\n{}\r\n",
            self.host(),
            self.auth()
        );
        send(&self.addr, head, headers, body)
    }
}

/// Writes `head` (the request line and any header lines), `headers` and
/// `body` on a new connection to `addr`, and returns it.
fn send(
    addr: &str,
    mut head: String,
    headers: &[String],
    body: &str,
) -> std::net::TcpStream {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head.push_str(body);
    s.write_all(head.as_bytes()).unwrap();
    s
}

/// The JSON of every `data:` line of an SSE body.
fn sse_messages(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

const MODERN_HTTP: [&str; 2] = [
    "Accept: application/json, text/event-stream",
    "MCP-Protocol-Version: 2026-07-28",
];

#[test]
fn over_http_a_modern_call_streams_its_progress_and_closing_it_cancels() {
    use std::io::Read;
    let dir = demo("serve_http_modern_stream", &[]);
    let l = Listening::start(&dir, "demo", &["--yes"], &[]);
    let headers: Vec<String> =
        MODERN_HTTP.iter().map(|h| h.to_string()).collect();
    let call = |id: u64, tool: &str, args: Value, extra: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": args,
                          "_meta": modern_meta(extra)}})
        .to_string()
    };
    let body = call(
        1,
        "demo__slow",
        json!({"ms": 40}),
        json!({"progressToken": "p1", "io.modelcontextprotocol/logLevel": "info"}),
    );
    let mut s = l.open(&headers, &body);
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.contains("Content-Type: text/event-stream"), "{out}");
    let msgs = sse_messages(&out);
    assert_eq!(
        msgs.len(),
        4,
        "three progress notices, then the result: {out}"
    );
    assert_eq!(msgs[0]["method"], "notifications/progress");
    assert_eq!(msgs[0]["params"]["progressToken"], "p1");
    assert_eq!(msgs[3]["id"], 1);
    assert_eq!(msgs[3]["result"]["content"][0]["text"], "done");
    // A log message the request asked for goes on its stream.
    let body = call(
        2,
        "demo__log_and_notify",
        json!({}),
        json!({"io.modelcontextprotocol/logLevel": "info"}),
    );
    let mut out = String::new();
    l.open(&headers, &body).read_to_string(&mut out).unwrap();
    let msgs = sse_messages(&out);
    assert_eq!(msgs[0]["method"], "notifications/message", "{out}");
    assert_eq!(msgs[0]["params"]["logger"], "demo");
    // Closing the stream cancels: the upstream is told.
    let body = call(3, "demo__slow", json!({"ms": 1500}), json!({}));
    let s = l.open(&headers, &body);
    let upstream = wait_recorded(&dir, "the slow call", |m| {
        m["method"] == "tools/call" && m["params"]["arguments"]["ms"] == 1500
    });
    drop(s);
    let cancel = wait_recorded(&dir, "the cancellation", |m| {
        m["method"] == "notifications/cancelled"
    });
    assert_eq!(cancel["params"]["requestId"], upstream["id"], "{cancel}");
}

#[test]
fn over_http_a_handshake_host_cancels_by_notification() {
    let dir = demo("serve_http_cancel", &[]);
    let l = Listening::start(&dir, "demo", &["--yes"], &[]);
    let (status, body) = l.post(&[l.host(), l.auth()], INIT);
    assert_eq!(status, 200, "{body}");
    let sid = body
        .lines()
        .find_map(|h| h.strip_prefix("Mcp-Session-Id: "))
        .expect("a session id")
        .to_string();
    let session = format!("Mcp-Session-Id: {sid}");
    let slow = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "demo__slow", "arguments": {"ms": 1500}}});
    let accept = "Accept: application/json, text/event-stream".to_string();
    let waiting = {
        let s = l.open(&[session.clone(), accept], &slow.to_string());
        std::thread::spawn(move || {
            use std::io::Read;
            let mut out = String::new();
            let _ = (&s).read_to_string(&mut out);
            out
        })
    };
    let upstream =
        wait_recorded(&dir, "the call", |m| m["method"] == "tools/call");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 5}});
    let (status, _) =
        l.post(&[l.host(), l.auth(), session], &cancel.to_string());
    assert_eq!(status, 202);
    let got = wait_recorded(&dir, "the cancellation", |m| {
        m["method"] == "notifications/cancelled"
    });
    assert_eq!(got["params"]["requestId"], upstream["id"], "{got}");
    // The stream ends without a response.
    let out = waiting.join().unwrap();
    assert!(sse_messages(&out).iter().all(|m| m.get("id").is_none()), "{out}");
}

#[test]
fn check_config_shows_what_serve_would_expose_from_the_lock() {
    let dir = Dir::new("serve_check_config");
    let pids = format!("--pid-file={}", dir.path("pids").display());
    let other = dir.write(
        ".mcp.json",
        json!({"mcpServers": {"demo": fixture_server(&[&pids]),
                              "other": fixture_server(&[]),
                              "off": fixture_server(&[])}})
        .to_string(),
    );
    assert!(other.exists());
    // Before any lock: which servers, and that their names are unknown.
    let out =
        run_allowed(&dir, "demo,other", &["check-config"]).assert_exit(0);
    assert!(
        out.stdout.contains("serve would expose 2 servers: demo, other"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("not locked"), "{}", out.stdout);
    // Nothing was started.
    assert_eq!(read_pids(&dir.path("pids")).len(), 0);
    run_allowed(&dir, "demo", &["lock", "demo"]).assert_exit(0);
    let out =
        run_allowed(&dir, "demo,other", &["check-config"]).assert_exit(0);
    assert!(out.stdout.contains("demo__echo (read)"), "{}", out.stdout);
    assert!(out.stdout.contains("demo__delete_all (execute)"));
    assert!(out.stdout.contains("fixture://docs/readme"));
    let out = run_allowed(&dir, "demo,other", &["check-config", "--json"])
        .assert_exit(0);
    let serve = &out.stdout_json()["serve"];
    assert_eq!(serve["servers"], json!(["demo", "other"]), "{serve}");
    assert_eq!(serve["unlocked"], json!(["other"]));
    assert!(serve["tools"].as_array().unwrap().contains(&json!("demo__echo")));
    assert!(
        serve["prompts"].as_array().unwrap().contains(&json!("demo__greet"))
    );
    // The dry run agrees on the names (it starts the server).
    let dry = run_allowed(&dir, "demo", &["serve", "--dry-run", "--json"])
        .assert_exit(0)
        .stdout_json();
    let mut dry_names: Vec<String> = dry["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    dry_names.sort();
    assert_eq!(json!(dry_names), serve["tools"]);
}

/// Waits for a notification `method` the gateway sent the host.
fn wait_note(h: &mut Host, method: &str) -> Value {
    if let Some(n) = h.notes.iter().find(|n| n["method"] == method) {
        return n.clone();
    }
    loop {
        let m = h
            .lines
            .recv_timeout(WAIT)
            .unwrap_or_else(|e| panic!("no {method}: {e}"));
        if m["method"] == method {
            return m;
        }
    }
}

#[test]
fn a_host_subscribes_through_serve_and_is_told_of_updates() {
    let dir = demo("serve_subscribe", &["--subscribe"]);
    let mut h = Host::start(&dir, "demo", &[]);
    let init = h.initialize(json!({}));
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"], true,
        "{init}"
    );
    let r = h.request(
        "resources/subscribe",
        json!({"uri": "fixture://docs/readme"}),
    );
    assert_eq!(r["result"], json!({}), "{r}");
    assert_eq!(
        received(&dir.path("rec"), "resources/subscribe")[0]["uri"],
        "fixture://docs/readme"
    );
    // Sent by the upstream while idle: read between requests.
    let n = wait_note(&mut h, "notifications/resources/updated");
    assert_eq!(n["params"]["uri"], "fixture://docs/readme", "{n}");
    let r = h.request(
        "resources/unsubscribe",
        json!({"uri": "fixture://docs/readme"}),
    );
    assert_eq!(r["result"], json!({}), "{r}");
    assert_eq!(received(&dir.path("rec"), "resources/unsubscribe").len(), 1);
    let r = h.request("resources/subscribe", json!({"uri": "nope://x"}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(h.finish(), Some(0));
    // Without an upstream that takes subscriptions, none is declared.
    let dir = demo("serve_no_subscribe", &[]);
    let mut h = Host::start(&dir, "demo", &[]);
    let init = h.initialize(json!({}));
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"],
        false
    );
    let r = h.request(
        "resources/subscribe",
        json!({"uri": "fixture://docs/readme"}),
    );
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no resource subscriptions"),
        "{r}"
    );
    assert_eq!(h.finish(), Some(0));
}

/// Reads `s` until its text contains `want` (or it ends); the text.
fn read_until(s: &mut std::net::TcpStream, want: &str) -> String {
    use std::io::Read;
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut text = String::new();
    let mut buf = [0u8; 4096];
    while !text.contains(want) {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => text.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
    text
}

#[test]
fn over_http_a_session_gets_its_updates_on_one_get_stream() {
    let dir = demo("serve_http_get", &["--subscribe"]);
    let l = Listening::start(&dir, "demo", &[], &[]);
    let (status, body) = l.post(&[l.host(), l.auth()], INIT);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""subscribe":true"#), "{body}");
    let sid = body
        .lines()
        .find_map(|h| h.strip_prefix("Mcp-Session-Id: "))
        .expect("a session id")
        .to_string();
    let session = format!("Mcp-Session-Id: {sid}");
    let accept = "Accept: text/event-stream".to_string();
    // 2026-07-28 has no standalone stream; nor has a request without a
    // session; a second stream of a session is refused.
    let modern = "MCP-Protocol-Version: 2026-07-28".to_string();
    let mut s = l.raw("GET", &[modern, accept.clone()], "");
    assert!(read_until(&mut s, "\r\n").starts_with("HTTP/1.1 405"));
    let mut get = l.raw("GET", &[session.clone(), accept.clone()], "");
    let head = read_until(&mut get, "\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/event-stream"), "{head}");
    let mut again = l.raw("GET", &[session.clone(), accept], "");
    assert!(read_until(&mut again, "\r\n").starts_with("HTTP/1.1 409"));
    let sub = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                     "params": {"uri": "fixture://docs/readme"}});
    let (status, body) =
        l.post(&[l.host(), l.auth(), session.clone()], &sub.to_string());
    assert_eq!(status, 200, "{body}");
    let events = read_until(&mut get, "resources/updated");
    let updated = sse_messages(&events);
    assert_eq!(
        updated[0]["params"]["uri"], "fixture://docs/readme",
        "{events}"
    );
    // Ending the session ends its stream and its subscriptions.
    let mut d = l.raw("DELETE", &[session], "");
    assert!(read_until(&mut d, "\r\n").starts_with("HTTP/1.1 204"));
    let rest = read_until(&mut get, "never");
    assert!(!rest.contains("never"));
    wait_recorded(&dir, "the unsubscription", |m| {
        m["method"] == "resources/unsubscribe"
    });
}

#[test]
fn an_upstream_cancelling_its_question_cancels_it_at_the_host() {
    let dir = Dir::new("serve_upstream_cancel");
    let asks = json!([{"method": "elicitation/create", "cancel": true,
        "params": {"message": "Your name?",
                   "requestedSchema": {"type": "object", "properties": {}}}}]);
    let file = dir.write("asks.json", asks.to_string());
    let rec = format!("--record={}", dir.path("rec").display());
    let server =
        fixture_server(&["--ask-at-call", file.to_str().unwrap(), &rec]);
    write_mcp_json(&dir, &[("demo", server)]);
    let mut h = Host::start(&dir, "demo", &["--yes"]);
    h.initialize(json!({"elicitation": {}}));
    h.send(&json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                   "params": {"name": "demo__echo", "arguments": {"text": "x"}}}));
    // The host gets the question, leaves it unanswered, and is told it
    // was cancelled; the call then ends.
    let result = question_cancelled_then_result(&mut h, 50);
    let answers: Value =
        serde_json::from_str(&text(&result["result"])).unwrap();
    assert_eq!(answers[0]["cancelled"], true, "{answers}");
    assert_eq!(h.finish(), Some(0));
    let j = journal(&dir);
    let cancelled = events(&j, "serve_cancelled");
    assert_eq!(cancelled[0]["by"], "server", "{cancelled:?}");
    assert_eq!(cancelled[0]["server"], "demo");
    // The upstream, which read everything up to its end, got no answer to
    // the question it cancelled.
    assert!(
        recorded(&dir).iter().all(|m| m["id"] != "a1"),
        "{:?}",
        recorded(&dir)
    );
}

#[test]
fn rivumi_mcp_as_a_modern_host_sees_upstream_logs_through_serve() {
    // stdio: the two hops of `two_hops`; HTTP: a `serve --listen`.
    let dir = Dir::new("serve_modern_logs");
    two_hops(&dir, &["--yes"]);
    let served = demo("serve_modern_logs_http", &[]);
    let l = Listening::start(&served, "demo", &["--yes"], &[]);
    let host = Dir::new("serve_modern_logs_host");
    write_mcp_json(
        &host,
        &[(
            "gw",
            json!({"url": format!("http://{}/mcp", l.addr), "bearer_token_env_var": "GW_TOKEN"}),
        )],
    );
    for (d, how) in [(&dir, "stdio"), (&host, "http")] {
        let call = |level: Option<&str>| {
            let mut all = vec!["--protocol", "modern"];
            if let Some(level) = level {
                all.extend(["--log-level", level]);
            }
            all.extend(["call", "-y", "gw", "demo__log_and_notify"]);
            let mut c = run_allowed(d, "gw", &all);
            c.env("GW_TOKEN", &l.token);
            c.assert_exit(0)
        };
        let out = call(Some("debug"));
        assert!(
            out.stderr.contains("[gw] info: hello from fixture"),
            "{how}: {}",
            out.all()
        );
        // Without a level in its requests, a modern host gets none.
        let out = call(None);
        assert!(
            !out.stderr.contains("hello from fixture"),
            "{how}: {}",
            out.all()
        );
    }
}

#[test]
fn an_upstream_cancelling_a_question_parked_for_a_modern_host_lets_the_call_go_on()
 {
    let dir = Dir::new("serve_modern_upstream_cancel");
    let asks = json!([{"method": "elicitation/create", "cancel": true,
        "params": {"message": "Your name?",
                   "requestedSchema": {"type": "object", "properties": {}}}}]);
    asking(&dir, &asks);
    let mut h = Host::start(&dir, "demo", &["--yes"]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "h", "version": "1"}});
    let params = json!({"name": "demo__echo", "arguments": {"text": "x"}, "_meta": meta.clone()});
    let r = h.request("tools/call", params.clone());
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    // The host answers late; the question was cancelled meanwhile, and
    // the retry gets the call's result.
    std::thread::sleep(Duration::from_millis(500));
    // The call went on without the answer: the upstream is free again.
    let read = h.request(
        "resources/read",
        json!({"uri": "fixture://docs/readme", "_meta": meta}),
    );
    assert_eq!(read["result"]["resultType"], "complete", "{read}");
    let mut retry = params.clone();
    retry["requestState"] = r["result"]["requestState"].clone();
    retry["inputResponses"] =
        json!({"rivumi-upstream": {"action": "accept", "content": {}}});
    let r = h.request("tools/call", retry);
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    let answers: Value = serde_json::from_str(&text(&r["result"])).unwrap();
    assert_eq!(answers[0]["cancelled"], true, "{answers}");
    assert_eq!(h.finish(), Some(0));
}

#[test]
fn a_modern_host_listens_for_updates_and_list_changes_on_stdio() {
    let dir = demo("serve_listen", &["--subscribe"]);
    let mut h = Host::start(&dir, "demo", &[]);
    let d =
        h.request("server/discover", json!({"_meta": modern_meta(json!({}))}));
    assert_eq!(
        d["result"]["capabilities"]["resources"]["subscribe"], true,
        "{d}"
    );
    // Nothing asked: acknowledged and answered at once.
    let r = h.request(
        "subscriptions/listen",
        json!({"notifications": {}, "_meta": modern_meta(json!({}))}),
    );
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    h.send(&json!({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true,
                                     "resourceSubscriptions": ["fixture://docs/readme", "nope://x"]},
                   "_meta": modern_meta(json!({}))}}));
    let ack = loop {
        let m = h.lines.recv_timeout(WAIT).expect("an acknowledgement");
        if m["method"] == "notifications/subscriptions/acknowledged"
            && m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
                == "L"
        {
            break m;
        }
    };
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["fixture://docs/readme"]}),
        "{ack}"
    );
    let n = wait_note(&mut h, "notifications/resources/updated");
    assert_eq!(n["params"]["uri"], "fixture://docs/readme", "{n}");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    // Cancelling it ends it: the upstream is unsubscribed, no response.
    h.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": "L"}}));
    wait_recorded(&dir, "the unsubscription", |m| {
        m["method"] == "resources/unsubscribe"
    });
    let r = h.request("tools/list", json!({"_meta": modern_meta(json!({}))}));
    assert!(r["result"]["tools"].is_array());
    while let Ok(m) = h.lines.try_recv() {
        assert_ne!(m.get("id"), Some(&json!("L")), "{m}");
    }
    assert_eq!(h.finish(), Some(0));
}

#[test]
fn over_http_a_modern_listen_is_a_stream_closing_it_unsubscribes() {
    let dir = demo("serve_http_listen", &["--subscribe"]);
    let l = Listening::start(&dir, "demo", &[], &[]);
    let headers: Vec<String> =
        MODERN_HTTP.iter().map(|h| h.to_string()).collect();
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
        "params": {"notifications": {"resourceSubscriptions": ["fixture://docs/readme"]},
                   "_meta": modern_meta(json!({}))}});
    let mut s = l.open(&headers, &body.to_string());
    let text = read_until(&mut s, "resources/updated");
    let msgs = sse_messages(&text);
    assert_eq!(
        msgs[0]["method"], "notifications/subscriptions/acknowledged",
        "{text}"
    );
    assert_eq!(msgs[1]["params"]["uri"], "fixture://docs/readme", "{text}");
    assert_eq!(
        msgs[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );
    drop(s);
    wait_recorded(&dir, "the unsubscription", |m| {
        m["method"] == "resources/unsubscribe"
    });
    // Without a stream it cannot be served.
    let json_only = vec![
        "Accept: application/json".to_string(),
        "MCP-Protocol-Version: 2026-07-28".to_string(),
    ];
    let mut s = l.open(&json_only, &body.to_string());
    let text = read_until(&mut s, "}}");
    assert!(text.contains("needs a stream"), "{text}");
}

/// A handshake-era HTTP upstream behind `serve`, named `web`: the script's
/// `echo`, except that a call whose text is `slow` streams nothing until
/// the client cancels it (or 15 s pass), one whose text is `slow-json`
/// holds its POST until then and answers with one JSON body (`told`, or
/// `never told` after 15 s), and one whose text is `ask` asks
/// a question on its stream, cancels it 200 ms later and then answers
/// `done`.
fn http_upstream(test: &str) -> (Dir, crate::util::http::HttpFixture) {
    use crate::util::http::{HttpFixture, McpScript};
    let script = McpScript::new().sessions();
    let fx = HttpFixture::start(move |req, conn| {
        let msg = req.json();
        let text = msg.pointer("/params/arguments/text").cloned();
        if msg["method"] != "tools/call" {
            return script.handle(req, conn);
        }
        let id = msg["id"].clone();
        if text == Some(json!("slow-json")) {
            // One JSON body, sent only once the client cancelled (the
            // POST is held meanwhile, as such servers do).
            let told = conn.wait_for(Duration::from_secs(15), |rs| {
                rs.iter().any(|r| {
                    r.rpc_method().as_deref()
                        == Some("notifications/cancelled")
                })
            });
            let text = if told { "told" } else { "never told" };
            conn.json(
                200,
                &[],
                &json!({"jsonrpc": "2.0", "id": id,
                "result": {"content": [{"type": "text", "text": text}]}}),
            );
        } else if text == Some(json!("slow")) {
            conn.sse(&[]);
            conn.wait_for(Duration::from_secs(15), |rs| {
                rs.iter().any(|r| {
                    r.rpc_method().as_deref()
                        == Some("notifications/cancelled")
                })
            });
            conn.close();
        } else if text == Some(json!("ask")) {
            conn.sse(&[]);
            conn.event(
                None,
                &json!({"jsonrpc": "2.0", "id": "e1",
                "method": "elicitation/create", "params": {
                    "message": "Your name?",
                    "requestedSchema": {"type": "object", "properties": {}}}}),
            );
            conn.sleep(Duration::from_millis(200));
            conn.event(
                None,
                &json!({"jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": "e1", "reason": "changed my mind"}}),
            );
            conn.sleep(Duration::from_millis(300));
            conn.event(
                None,
                &json!({"jsonrpc": "2.0", "id": id, "result": {
                "content": [{"type": "text", "text": "done"}]}}),
            );
        } else {
            script.handle(req, conn);
        }
    });
    let dir = Dir::new(test);
    write_mcp_json(
        &dir,
        &[("web", json!({"url": fx.url(), "protocol": "legacy"}))],
    );
    (dir, fx)
}

#[test]
fn a_host_cancellation_reaches_a_handshake_http_upstream_and_frees_it() {
    let (dir, fx) = http_upstream("serve_cancel_http_upstream");
    let mut h = call_then_cancel(&dir, &fx, "slow-1", "slow");
    // The upstream is told, with its own id, in its session.
    assert!(
        fx_has(&fx, |rs| rs
            .iter()
            .any(|r| r.rpc_method().as_deref()
                == Some("notifications/cancelled"))),
        "{}",
        fx.summary()
    );
    let call = fx.posts_of("tools/call").remove(0);
    let cancel = fx.posts_of("notifications/cancelled").remove(0);
    assert_eq!(cancel.json()["params"]["requestId"], call.json()["id"]);
    assert_eq!(cancel.header("mcp-session-id"), call.header("mcp-session-id"));
    // The next call goes through at once (the upstream holds the slow
    // one's stream for 15 s more), in the same session; the cancelled
    // request gets no response.
    let r = h.call("web__echo", json!({"text": "after"}));
    assert_eq!(text(&r), "after");
    assert_eq!(
        fx.posts_of("initialize").len(),
        1,
        "{}\n{:#?}",
        fx.summary(),
        journal(&dir)
    );
    while let Ok(m) = h.lines.try_recv() {
        assert_ne!(m.get("id"), Some(&json!("slow-1")), "{m}");
    }
    assert_eq!(h.finish(), Some(0));
}

#[test]
fn a_host_cancellation_reaches_an_http_upstream_holding_a_json_answer() {
    let (dir, fx) = http_upstream("serve_cancel_http_json_upstream");
    let mut h = call_then_cancel(&dir, &fx, "slow-2", "slow-json");
    // Told while it held the POST: the cancellation was not left until
    // its answer came.
    let r = h.call("web__echo", json!({"text": "after"}));
    assert_eq!(text(&r), "after");
    let call = fx.posts_of("tools/call").remove(0);
    let cancel = fx.posts_of("notifications/cancelled").remove(0);
    assert_eq!(cancel.json()["params"]["requestId"], call.json()["id"]);
    assert!(cancel.at < call.done.expect("answered"), "{}", fx.summary());
    while let Ok(m) = h.lines.try_recv() {
        assert_ne!(m.get("id"), Some(&json!("slow-2")), "{m}");
    }
    assert_eq!(h.finish(), Some(0));
}

#[test]
fn a_handshake_http_upstream_cancelling_its_question_cancels_it_at_the_host() {
    let (dir, fx) = http_upstream("serve_http_upstream_cancels");
    let mut h = Host::start(&dir, "web", &["--yes"]);
    h.initialize(json!({"elicitation": {}}));
    h.send(&json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                   "params": {"name": "web__echo", "arguments": {"text": "ask"}}}));
    let result = question_cancelled_then_result(&mut h, 50);
    assert_eq!(text(&result["result"]), "done", "{result}");
    assert_eq!(h.finish(), Some(0));
    // The upstream got no answer to the question it cancelled.
    assert!(
        fx.requests().iter().all(|r| r.json().get("id") != Some(&json!("e1"))),
        "{}",
        fx.summary()
    );
    let j = journal(&dir);
    let cancelled = events(&j, "serve_cancelled");
    assert_eq!(cancelled[0]["by"], "server", "{cancelled:?}");
}

/// Reads what serve sends the host until the response to request `id`:
/// an `elicitation/create` must have come first, left unanswered, and
/// then its `notifications/cancelled`. The response.
#[track_caller]
fn question_cancelled_then_result(h: &mut Host, id: u64) -> Value {
    let mut asked = None;
    let mut cancelled = None;
    let result = loop {
        let m = h.lines.recv_timeout(WAIT).expect("serve went quiet");
        if m["method"] == "elicitation/create" {
            asked = Some(m["id"].clone());
        } else if m["method"] == "notifications/cancelled" {
            cancelled = Some(m["params"]["requestId"].clone());
        } else if m["id"] == id {
            break m;
        }
    };
    let asked = asked.expect("the question reached the host");
    assert_eq!(cancelled, Some(asked), "{result}");
    result
}

/// Whether `pred` comes true, within 10 s, of what the fixture received.
fn fx_has(
    fx: &crate::util::http::HttpFixture,
    pred: impl Fn(&[crate::util::http::Request]) -> bool,
) -> bool {
    crate::util::oauth::wait_until(Duration::from_secs(10), || {
        pred(&fx.requests())
    })
}

/// A `serve` host of `web` that calls `echo` with `text` as request `id`
/// and, once the upstream has the call, cancels it.
fn call_then_cancel(
    dir: &Dir,
    fx: &crate::util::http::HttpFixture,
    id: &str,
    text: &str,
) -> Host {
    let mut h = Host::start(dir, "web", &["--yes"]);
    h.initialize(json!({}));
    h.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "web__echo", "arguments": {"text": text}}}));
    assert!(
        fx_has(fx, |rs| rs
            .iter()
            .any(|r| r.rpc_method().as_deref() == Some("tools/call"))),
        "{}",
        fx.summary()
    );
    h.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": id, "reason": "user"}}));
    h
}
