//! The Streamable HTTP transport through the real binary, against the
//! in-process scripted server of `util/http.rs`: JSON and SSE answers,
//! server requests on a stream, sessions and their expiry, the headers of
//! every request, refused redirects, size and time bounds, stream
//! resumption, bearer tokens and secrets, authentication challenges, the
//! closing DELETE, `localhost`, proxies and batches.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::http::{HttpFixture, McpScript, RESUME_EVENT_ID, Request};
use crate::util::web::{
    call_hi, cmd, error_line, one_post, sequence, setup_auto, setup_legacy,
};
use crate::util::{
    Dir, Output, assert_absent, assert_contains, write_mcp_json,
};

/// What `list web` prints for the script's one tool.
const LIST_OUT: &str = "web: http-fixture 1.0 (protocol 2025-11-25)\n  \
                        mcp__web__echo  read  Echoes its text\n      \
                        (text: string)\n";

/// The POSTed replies (responses to server requests) with this id.
fn replies_to(fx: &HttpFixture, id: &Value) -> Vec<Value> {
    fx.requests()
        .iter()
        .filter(|r| {
            r.method == "POST"
                && r.is_rpc_response()
                && r.rpc_id().as_ref() == Some(id)
        })
        .map(Request::json)
        .collect()
}

#[test]
fn json_answers_list_and_call() {
    let fx = HttpFixture::mcp(McpScript::new());
    let dir = setup_legacy("http_json", &fx.url());
    let out = cmd(&dir, &["list", "web"]).assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
    assert_eq!(out.stderr, "");
    let out = call_hi(&dir, &[]);
    assert_eq!(out.stderr, "");
    let call = one_post(&fx, "tools/call");
    assert_eq!(
        call.json()["params"]["arguments"],
        json!({"text": "hi"}),
        "{}",
        call.body
    );
    // Without a session there is nothing to DELETE.
    assert!(
        fx.requests().iter().all(|r| r.method == "POST"),
        "{}",
        fx.summary()
    );
}

#[test]
fn list_json_over_http() {
    let fx = HttpFixture::mcp(McpScript::new());
    let dir = setup_legacy("http_list_json", &fx.url());
    let out = cmd(&dir, &["list", "web", "--json"]).assert_exit(0);
    let v = out.stdout_json();
    let s = &v["servers"][0];
    assert_eq!(s["ok"], json!(true), "{v}");
    assert_eq!(s["protocol"], json!("2025-11-25"));
    assert_eq!(s["tools"][0]["qualified_name"], json!("mcp__web__echo"));
    assert_eq!(s["tools"][0]["classification"], json!("read"));
}

#[test]
fn notifications_are_answered_202() {
    let fx = HttpFixture::mcp(McpScript::new().sessions());
    let dir = setup_legacy("http_202", &fx.url());
    call_hi(&dir, &[]);
    let n = one_post(&fx, "notifications/initialized");
    assert_eq!(n.status, Some(202));
    assert!(n.rpc_id().is_none(), "{}", n.body);
}

#[test]
fn sse_answers_with_priming_and_server_requests() {
    let ping = json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"});
    let roots = json!({"jsonrpc": "2.0", "id": 77, "method": "roots/list"});
    let script = McpScript::new()
        .sse()
        .priming()
        .sessions()
        .server_request(ping)
        .server_request(roots);
    let fx = HttpFixture::mcp(script);
    let dir = setup_legacy("http_sse", &fx.url());
    let out = cmd(&dir, &["list", "web"]).assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
    call_hi(&dir, &[]);
    // The ping got an empty result with the same id, the roots/list a
    // -32601, each POSTed once, with the session.
    let r = replies_to(&fx, &json!("srv-1"));
    assert_eq!(r, [json!({"jsonrpc": "2.0", "id": "srv-1", "result": {}})]);
    let r = replies_to(&fx, &json!(77));
    assert_eq!(r.len(), 1, "{}", fx.summary());
    assert_eq!(r[0]["jsonrpc"], json!("2.0"));
    assert_eq!(r[0]["error"]["code"], json!(-32601), "{}", r[0]);
    assert!(r[0].get("result").is_none(), "{}", r[0]);
    for req in fx.requests().iter().filter(|r| r.is_rpc_response()) {
        assert_eq!(req.header("mcp-session-id"), Some("sess-2"));
        assert_eq!(req.status, Some(202));
    }
    // The replies arrived while the call's stream was open.
    let call = one_post(&fx, "tools/call");
    for req in fx.requests().iter().filter(|r| r.is_rpc_response()) {
        assert!(req.at > call.at && req.at < call.done.unwrap());
    }
}

#[test]
fn session_id_and_protocol_headers() {
    let fx = HttpFixture::mcp(McpScript::new().sessions());
    let dir = setup_auto("http_session_headers", &fx.url());
    call_hi(&dir, &[]);
    let reqs = fx.requests();
    let methods: Vec<String> = reqs
        .iter()
        .map(|r| {
            format!("{} {}", r.method, r.rpc_method().unwrap_or_default())
        })
        .collect();
    assert_eq!(
        methods,
        [
            "POST server/discover",
            "POST initialize",
            "POST notifications/initialized",
            "POST tools/list",
            "POST tools/call",
            "DELETE ",
        ],
        "{}",
        fx.summary()
    );
    // The 2026-07-28 probe: the modern envelope and headers, no session.
    // The 2025 fixture refuses it (400, no session id), and the
    // handshake era goes on as if nothing had happened.
    let probe = &reqs[0];
    assert_eq!(probe.header_all("mcp-protocol-version"), ["2026-07-28"]);
    assert_eq!(probe.header_all("mcp-method"), ["server/discover"]);
    assert_eq!(probe.header("mcp-session-id"), None);
    assert_eq!(
        probe.json()["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        json!("2026-07-28")
    );
    assert_eq!(probe.status, Some(400), "a 2025 server with sessions");
    let init = &reqs[1];
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(init.header("mcp-protocol-version"), None);
    assert_eq!(init.header("mcp-method"), None);
    assert_eq!(init.json()["params"]["protocolVersion"], json!("2025-11-25"));
    for r in &reqs[2..] {
        assert_eq!(r.header("mcp-method"), None, "{r:?}");
        assert_eq!(r.header_all("mcp-session-id"), ["sess-1"], "{r:?}");
        assert_eq!(
            r.header_all("mcp-protocol-version"),
            ["2025-11-25"],
            "{r:?}"
        );
    }
    for r in reqs.iter().filter(|r| r.method == "POST") {
        assert_eq!(
            r.header("accept"),
            Some("application/json, text/event-stream"),
            "{r:?}"
        );
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert!(!r.chunked, "POST bodies have a content-length");
        assert_eq!(r.path, "/mcp");
    }
    // Once initialized, the session's own event stream is asked for (a
    // GET this fixture refuses with 405, which is no error).
    let gets = fx.standalone_gets();
    assert_eq!(gets.len(), 1, "{}", fx.summary());
    assert_eq!(gets[0].header("accept"), Some("text/event-stream"));
    assert_eq!(gets[0].header("mcp-session-id"), Some("sess-1"));
    assert_eq!(gets[0].header("mcp-protocol-version"), Some("2025-11-25"));
}

#[test]
fn expired_session_reinitializes_once_and_retries() {
    // Session 1 takes notifications/initialized and tools/list, then 404s
    // the call; session 2 never expires.
    let fx = HttpFixture::mcp(McpScript::new().expire_after(&[2]));
    let dir = setup_legacy("http_expired", &fx.url());
    call_hi(&dir, &[]);
    let reqs = fx.requests();
    let seen: Vec<(String, Option<&str>, Option<u16>)> = reqs
        .iter()
        .map(|r| {
            (
                format!("{} {}", r.method, r.rpc_method().unwrap_or_default()),
                r.header("mcp-session-id"),
                r.status,
            )
        })
        .collect();
    let s = |m: &str, sid: Option<&'static str>, st: u16| {
        (m.to_string(), sid, Some(st))
    };
    assert_eq!(
        seen,
        [
            s("POST initialize", None, 200),
            s("POST notifications/initialized", Some("sess-1"), 202),
            s("POST tools/list", Some("sess-1"), 200),
            s("POST tools/call", Some("sess-1"), 404),
            s("POST initialize", None, 200),
            s("POST notifications/initialized", Some("sess-2"), 202),
            s("POST tools/call", Some("sess-2"), 200),
            s("DELETE ", Some("sess-2"), 200),
        ],
        "{}",
        fx.summary()
    );
    // The re-initialize is a fresh one: no stale protocol header either.
    assert_eq!(reqs[4].header("mcp-protocol-version"), None);
    assert_eq!(reqs[6].header("mcp-protocol-version"), Some("2025-11-25"));
    // The retried call is the same message.
    assert_eq!(reqs[3].body, reqs[6].body);
}

#[test]
fn second_404_after_reinitialize_fails() {
    // Session 2 expires right after notifications/initialized.
    let fx = HttpFixture::mcp(McpScript::new().expire_after(&[2, 1]));
    let dir = setup_legacy("http_expired_twice", &fx.url());
    let out = cmd(&dir, &["call", "mcp__web__echo", "text=hi"]).assert_exit(4);
    assert_eq!(out.stdout, "");
    let line = error_line(&out);
    assert_contains(&line, "HTTP 404 again after starting a new session");
    assert_eq!(fx.posts_of("initialize").len(), 2, "{}", fx.summary());
    assert_eq!(fx.posts_of("tools/call").len(), 2, "{}", fx.summary());
}

#[test]
fn discover_on_a_server_without_authorization_says_so() {
    let fx = HttpFixture::mcp(McpScript::new());
    let dir = setup_auto("http_discover_no_auth", &fx.url());
    let out = cmd(&dir, &["discover", "web"]).assert_exit(0);
    assert_eq!(
        out.stdout,
        format!(
            "server 'web' ({})\n  unauthenticated request: HTTP 200\n  no \
             authorization required: the server answered without a \
             challenge and publishes no protected-resource metadata; no \
             \"oauth\" block is needed\n",
            fx.url()
        )
    );
    assert_eq!(out.stderr, "");
    let v =
        cmd(&dir, &["discover", "web", "--json"]).assert_exit(0).stdout_json();
    assert_eq!(v["authorization_required"], false);
    assert_eq!(v["status"], 200);
}

#[test]
fn html_404_page_says_there_is_no_mcp_endpoint() {
    // A web server's "Not Found" page: the path is wrong (often /mcp).
    let fx = HttpFixture::start(|_, conn| {
        conn.respond(
            404,
            &[("content-type", "text/html; charset=utf-8")],
            b"<!DOCTYPE html><html><body><h1>Not Found</h1></body></html>",
        );
    });
    let dir = setup_auto("http_html_404", &fx.url());
    let out = cmd(&dir, &["list", "web"]).assert_exit(4);
    assert_eq!(out.stdout, "");
    assert_eq!(
        error_line(&out),
        "rivumi-mcp: server 'web': HTTP 404: no MCP endpoint at this URL \
         (check the path, often /mcp)"
    );
    assert_absent(&out.stderr, "DOCTYPE");
    assert_absent(&out.stderr, "HTTP+SSE");
}

#[test]
fn initialize_400_404_405_hint_at_the_old_transport() {
    for status in [400, 404, 405] {
        let fx = HttpFixture::mcp(McpScript::new().init_status(status));
        let dir = setup_auto("http_init_status", &fx.url());
        let out = cmd(&dir, &["list", "web"]).assert_exit(4);
        assert_eq!(out.stdout, "");
        let line = error_line(&out);
        assert_contains(&line, &format!("HTTP {status} to initialize"));
        assert_contains(&line, "deprecated HTTP+SSE transport");
        assert_contains(&line, "2024-11-05");
        // The 2026-07-28 probe, then initialize; nothing else.
        assert_eq!(fx.requests().len(), 2, "{}", fx.summary());
        assert_eq!(fx.posts_of("server/discover").len(), 1);
    }
}

#[test]
fn redirects_are_refused_not_followed() {
    let fx = HttpFixture::start(|_, conn| {
        conn.redirect(307, "/elsewhere/mcp");
    });
    let dir = setup_legacy("http_redirect", &fx.url());
    let out = cmd(&dir, &["list", "web"]).assert_exit(4);
    let line = error_line(&out);
    assert_contains(&line, "HTTP 307 redirect to '/elsewhere/mcp' refused");
    assert_eq!(fx.requests().len(), 1, "{}", fx.summary());

    // An absolute target on the same server is not followed either.
    let target = format!("http://127.0.0.1:{}/moved", fx.port());
    let t = target.clone();
    let fx2 = HttpFixture::start(move |_, conn| conn.redirect(308, &t));
    let dir = setup_legacy("http_redirect", &fx2.url());
    let out = cmd(&dir, &["call", "mcp__web__echo", "text=hi"]).assert_exit(4);
    let line = error_line(&out);
    assert_contains(&line, &format!("HTTP 308 redirect to '{target}'"));
    assert_eq!(fx2.requests().len(), 1, "{}", fx2.summary());
    assert_eq!(fx.requests().len(), 1, "{}", fx.summary());
}

#[test]
fn oversized_json_body_is_refused() {
    let script = McpScript::new();
    let fx = HttpFixture::start(move |req, conn| {
        if req.rpc_method().as_deref() == Some("tools/call") {
            let text = "x".repeat(200 * 1024);
            let mut answer = script.answer(&req.json());
            answer["result"]["content"][0]["text"] = json!(text);
            conn.json(200, &[], &answer);
        } else {
            script.handle(req, conn);
        }
    });
    let dir = setup_legacy("http_oversized", &fx.url());
    let out = cmd(
        &dir,
        &["call", "mcp__web__echo", "text=hi", "--max-message", "64K"],
    )
    .assert_exit(4);
    assert_eq!(out.stdout, "");
    let line = error_line(&out);
    assert_contains(&line, "larger than 65536 bytes");
    assert_contains(&line, "--max-message");
}

/// Runs `call ... --timeout 1` against a fixture whose `tools/call`
/// answer is `answer_call`; expects exit 5 within `within`.
fn call_times_out(
    test: &str,
    within: Duration,
    answer_call: impl Fn(&mut crate::util::http::Conn) + Send + Sync + 'static,
) -> (HttpFixture, Output) {
    let script = McpScript::new().sessions();
    let fx = HttpFixture::start(move |req, conn| {
        if req.rpc_method().as_deref() == Some("tools/call") {
            answer_call(conn);
        } else {
            script.handle(req, conn);
        }
    });
    let dir = setup_legacy(test, &fx.url());
    let start = Instant::now();
    let out =
        cmd(&dir, &["call", "mcp__web__echo", "text=hi", "--timeout", "1"])
            .assert_exit(5);
    let took = start.elapsed();
    assert!(took < within, "took {took:?}:\n{out:?}");
    assert!(took >= Duration::from_secs(1), "took {took:?}");
    assert_eq!(out.stdout, "");
    let line = error_line(&out);
    assert_contains(&line, "timed out after 1s waiting for tool call 'echo'");
    (fx, out)
}

#[test]
fn ctrl_c_cancels_the_call_on_the_wire() {
    let script = McpScript::new().sessions();
    let fx = HttpFixture::start(move |req, conn| {
        if req.rpc_method().as_deref() == Some("tools/call") {
            conn.sse(&[]);
            while conn.alive() && conn.write_raw(b": keepalive\n\n") {
                conn.sleep(Duration::from_millis(100));
            }
        } else {
            script.handle(req, conn);
        }
    });
    let dir = setup_legacy("http_sigint", &fx.url());
    let c = cmd(&dir, &["call", "mcp__web__echo", "text=hi"]);
    let child = c.spawn();
    let deadline = Instant::now() + Duration::from_secs(10);
    while fx.posts_of("tools/call").is_empty() {
        assert!(Instant::now() < deadline, "{}", fx.summary());
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = crate::util::wait_with_timeout(child, &c);
    assert_eq!(out.code, Some(130), "{}", c.report(&out));
    let call = one_post(&fx, "tools/call");
    let cancel = one_post(&fx, "notifications/cancelled");
    assert_eq!(
        cancel.json()["params"],
        json!({"requestId": call.json()["id"], "reason": "interrupted"})
    );
    assert_eq!(cancel.header("mcp-session-id"), Some("sess-1"));
}

#[test]
fn endless_keepalive_stream_times_out() {
    let (fx, _) = call_times_out(
        "http_keepalive_forever",
        Duration::from_millis(2000),
        |conn| {
            conn.sse(&[]);
            while conn.alive() && conn.write_raw(b": keepalive\n\n") {
                conn.sleep(Duration::from_millis(100));
            }
        },
    );
    // The call was cancelled, then the session deleted.
    let cancel = one_post(&fx, "notifications/cancelled");
    assert_eq!(cancel.json()["params"]["requestId"], json!(3));
    let last = fx.requests().pop().unwrap();
    assert_eq!(last.method, "DELETE", "{}", fx.summary());
}

#[test]
fn stalled_body_times_out() {
    call_times_out("http_stalled", Duration::from_millis(2000), |conn| {
        conn.stall(Duration::from_secs(10));
    });
}

#[test]
fn trickling_body_times_out() {
    call_times_out("http_trickle", Duration::from_millis(2500), |conn| {
        let body = json!({"jsonrpc": "2.0", "id": 3, "result": {
            "content": [{"type": "text", "text": "x".repeat(100)}]}});
        conn.trickle(body.to_string().as_bytes(), Duration::from_millis(200));
    });
}

#[test]
fn stalled_stream_times_out() {
    call_times_out("http_stalled_sse", Duration::from_millis(2000), |conn| {
        conn.sse(&[]);
        conn.write_raw(b"id: 1\ndata:\n\n");
        conn.sleep(Duration::from_secs(10));
    });
}

#[test]
fn wrong_content_type_shows_a_snippet() {
    let script = McpScript::new();
    let fx = HttpFixture::start(move |req, conn| {
        if req.rpc_method().as_deref() == Some("tools/list") {
            let body = format!(
                "<html><body>Gateway says no{}</body></html>",
                " padding".repeat(1000)
            );
            conn.respond(
                200,
                &[("content-type", "text/html; charset=utf-8")],
                body.as_bytes(),
            );
        } else {
            script.handle(req, conn);
        }
    });
    let dir = setup_legacy("http_content_type", &fx.url());
    let out = cmd(&dir, &["list", "web"]).assert_exit(4);
    let line = error_line(&out);
    assert_contains(&line, "unexpected content type 'text/html' (HTTP 200)");
    assert_contains(&line, "<html><body>Gateway says no padding");
    assert!(line.len() < 500, "the snippet is short: {} bytes", line.len());
}

#[test]
fn stream_ending_early_is_resumed_with_last_event_id() {
    let fx = HttpFixture::mcp(McpScript::new().sse().resume(200));
    let dir = setup_legacy("http_resume", &fx.url());
    call_hi(&dir, &[]);
    let reqs = fx.requests();
    let gets: Vec<&Request> =
        reqs.iter().filter(|r| r.method == "GET").collect();
    assert_eq!(gets.len(), 1, "{}", fx.summary());
    let get = gets[0];
    assert_eq!(get.path, "/mcp");
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("last-event-id"), Some(RESUME_EVENT_ID));
    assert_eq!(get.header("mcp-session-id"), Some("sess-1"));
    assert_eq!(get.header("mcp-protocol-version"), Some("2025-11-25"));
    assert_eq!(get.status, Some(200));
    let call = one_post(&fx, "tools/call");
    let gap = get.at.duration_since(call.done.unwrap());
    assert!(gap >= Duration::from_millis(200), "waited only {gap:?}");
    assert!(gap < Duration::from_millis(1000), "waited {gap:?}");
    // Nothing was POSTed again.
    assert_eq!(fx.posts_of("initialize").len(), 1);
}

#[test]
fn stream_ending_without_ids_or_response_fails() {
    let script = McpScript::new();
    let fx = HttpFixture::start(move |req, conn| {
        if req.rpc_method().as_deref() == Some("tools/call") {
            conn.sse(&[]);
            let note = json!({"jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "working"}});
            conn.event(None, &note);
        } else {
            script.handle(req, conn);
        }
    });
    let dir = setup_legacy("http_stream_no_ids", &fx.url());
    let start = Instant::now();
    let out = cmd(&dir, &["call", "mcp__web__echo", "text=hi"]).assert_exit(4);
    assert!(start.elapsed() < Duration::from_secs(5));
    let line = error_line(&out);
    assert_contains(&line, "ended before the response");
    assert!(
        fx.requests().iter().all(|r| r.method != "GET"),
        "{}",
        fx.summary()
    );
}

#[test]
fn bearer_token_on_every_request() {
    let fx = HttpFixture::mcp(McpScript::new().sessions());
    let dir = Dir::new("http_bearer");
    write_mcp_json(
        &dir,
        &[(
            "web",
            json!({"url": fx.url(), "bearer_token_env_var": "TOK",
                   "protocol": "legacy"}),
        )],
    );
    let mut c = cmd(&dir, &["call", "mcp__web__echo", "text=hi"]);
    let out = c.env("TOK", "tok-abc.123").assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    let reqs = fx.requests();
    assert_eq!(reqs.len(), 5, "{}", fx.summary());
    for r in &reqs {
        assert_eq!(
            r.header_all("authorization"),
            ["Bearer tok-abc.123"],
            "{}",
            r.summary()
        );
    }
}

#[test]
fn bearer_token_unset_refuses_before_connecting() {
    let fx = HttpFixture::mcp(McpScript::new());
    let dir = Dir::new("http_bearer_unset");
    write_mcp_json(
        &dir,
        &[(
            "web",
            json!({"url": fx.url(), "bearer_token_env_var": "TOK",
                   "protocol": "legacy"}),
        )],
    );
    let out = cmd(&dir, &["call", "mcp__web__echo", "text=hi"]).assert_exit(3);
    let line = error_line(&out);
    assert_contains(&line, "'TOK'");
    // Empty counts as unset.
    let mut c = cmd(&dir, &["list", "web"]);
    let out = c.env("TOK", "").assert_exit(3);
    assert_contains(&error_line(&out), "'TOK'");
    assert_eq!(fx.requests().len(), 0, "{}", fx.summary());
}

#[test]
fn server_without_token_gets_no_authorization() {
    let fx = HttpFixture::mcp(McpScript::new().sessions());
    let other = HttpFixture::mcp(McpScript::new().sessions());
    let dir = Dir::new("http_bearer_other");
    write_mcp_json(
        &dir,
        &[
            (
                "web",
                json!({"url": fx.url(), "bearer_token_env_var": "TOK",
                   "protocol": "legacy"}),
            ),
            ("other", json!({"url": other.url()})),
        ],
    );
    let mut c = cmd(&dir, &["list"]);
    c.env("RIVUMI_MCP_ALLOWLIST", "web,other").env("TOK", "tok-xyz");
    let out = c.assert_exit(0);
    assert_contains(&out.stdout, "mcp__web__echo");
    assert_contains(&out.stdout, "mcp__other__echo");
    assert!(fx.requests().len() >= 4);
    for r in fx.requests() {
        assert_eq!(r.header("authorization"), Some("Bearer tok-xyz"));
    }
    assert!(other.requests().len() >= 4, "{}", other.summary());
    for r in other.requests() {
        assert_eq!(r.header("authorization"), None, "{}", r.summary());
    }
}

#[test]
fn secrets_never_printed_even_verbose() {
    let fx = HttpFixture::mcp(McpScript::new().sessions());
    let dir = Dir::new("http_secrets");
    // Server `web` at `url`, its header and bearer token from variables.
    let configure = |url: &str| {
        write_mcp_json(
            &dir,
            &[(
                "web",
                json!({
                    "url": url,
                    "headers": {"X-Api-Key": "${KEY}"},
                    "bearer_token_env_var": "TOK",
                }),
            )],
        );
    };
    // `rivumi-mcp ARGS` with those variables set to the secrets.
    let with_secrets = |args: &[&str]| {
        let mut c = cmd(&dir, args);
        c.env("TOK", "token-secret-456").env("KEY", "planted-secret-123");
        c
    };
    configure(&fx.url());
    for args in [
        &["-v", "call", "mcp__web__echo", "text=hi"][..],
        &["-v", "-v", "list", "--json"],
        &["-v", "list", "web"],
    ] {
        let out = with_secrets(args).assert_exit(0);
        assert_absent(&out.all(), "planted-secret-123");
        assert_absent(&out.all(), "token-secret-456");
        assert_absent(&out.all(), "sess-");
    }
    let reqs = fx.requests();
    assert!(!reqs.is_empty());
    for r in reqs {
        assert_eq!(r.header("x-api-key"), Some("planted-secret-123"));
        assert_eq!(r.header("authorization"), Some("Bearer token-secret-456"));
    }
    // And an error path with -v: the 404 retry, then a failure.
    let fx = HttpFixture::mcp(McpScript::new().expire_after(&[2, 1]));
    configure(&fx.url());
    let out = with_secrets(&["-v", "call", "mcp__web__echo", "text=hi"])
        .assert_exit(4);
    assert_absent(&out.all(), "planted-secret-123");
    assert_absent(&out.all(), "token-secret-456");
}

const CHALLENGE: &str = "Bearer realm=\"x\", error=\"invalid_token\", \
     resource_metadata=\"http://127.0.0.1/.well-known/\
     oauth-protected-resource\"";

#[test]
fn unauthorized_names_the_challenge_and_login() {
    let fx = HttpFixture::start(|_, conn| {
        conn.respond(
            401,
            &[("www-authenticate", CHALLENGE), ("content-type", "text/plain")],
            b"who are you",
        );
    });
    let dir = setup_legacy("http_401", &fx.url());
    let out = cmd(&dir, &["list", "web"]).assert_exit(6);
    assert_eq!(out.stdout, "");
    let line = error_line(&out);
    assert_contains(&line, "authentication required (HTTP 401)");
    assert_contains(&line, "server 'web'");
    assert_contains(
        &line,
        "challenge: bearer (realm=\"x\", error=\"invalid_token\", \
         resource_metadata=\"http://127.0.0.1/.well-known/\
         oauth-protected-resource\")",
    );
    assert_contains(&line, "bearer_token_env_var");
    assert_contains(&line, "'rivumi-mcp login web'");
    assert_eq!(fx.requests().len(), 1, "{}", fx.summary());

    // --json: the error object says auth_required.
    let out = cmd(&dir, &["list", "web", "--json"]).assert_exit(6);
    let v = out.stdout_json();
    assert_eq!(v["servers"][0]["error"]["code"], json!("auth_required"));
}

#[test]
fn unauthorized_with_a_token_says_it_was_refused() {
    let fx = HttpFixture::start(|_, conn| {
        conn.respond(401, &[("www-authenticate", CHALLENGE)], b"");
    });
    let dir = Dir::new("http_401_token");
    write_mcp_json(
        &dir,
        &[(
            "web",
            json!({"url": fx.url(), "bearer_token_env_var": "TOK",
                   "protocol": "legacy"}),
        )],
    );
    let mut c = cmd(&dir, &["call", "mcp__web__echo", "text=hi"]);
    let out = c.env("TOK", "stale-token-789").assert_exit(6);
    let line = error_line(&out);
    assert_contains(&line, "authentication required (HTTP 401)");
    assert_contains(&line, "the token in 'TOK' was refused");
    assert_absent(&out.all(), "stale-token-789");
}

#[test]
fn forbidden_insufficient_scope_is_auth() {
    let fx = HttpFixture::start(|_, conn| {
        conn.respond(
            403,
            &[(
                "www-authenticate",
                "Bearer error=\"insufficient_scope\", scope=\"tools:call\"",
            )],
            b"",
        );
    });
    let dir = setup_legacy("http_403", &fx.url());
    let out = cmd(&dir, &["list", "web"]).assert_exit(6);
    let line = error_line(&out);
    assert_contains(&line, "insufficient scope (HTTP 403)");
    assert_contains(&line, "scope=\"tools:call\"");

    // A 403 without that challenge is a plain server error.
    let fx = HttpFixture::start(|_, conn| conn.respond(403, &[], b"nope"));
    let dir = setup_legacy("http_403_plain", &fx.url());
    let out = cmd(&dir, &["list", "web"]).assert_exit(4);
    assert_contains(&error_line(&out), "HTTP 403: nope");
}

#[test]
fn session_is_deleted_at_the_end() {
    // list, call, and a failing command all end with the DELETE.
    let fx = HttpFixture::mcp(McpScript::new().sessions());
    let dir = setup_legacy("http_delete", &fx.url());
    cmd(&dir, &["list", "web"]).assert_exit(0);
    call_hi(&dir, &[]);
    cmd(&dir, &["call", "mcp__web__nope"]).assert_exit(2);
    let reqs = fx.requests();
    let deletes: Vec<&Request> =
        reqs.iter().filter(|r| r.method == "DELETE").collect();
    let sids: Vec<Option<&str>> =
        deletes.iter().map(|r| r.header("mcp-session-id")).collect();
    assert_eq!(
        sids,
        [Some("sess-1"), Some("sess-2"), Some("sess-3")],
        "{}",
        fx.summary()
    );
    for d in &deletes {
        assert_eq!(d.header("mcp-protocol-version"), Some("2025-11-25"));
    }
    // Each DELETE is the last request of its session.
    for (i, r) in reqs.iter().enumerate() {
        if r.method == "DELETE" {
            let sid = r.header("mcp-session-id");
            assert!(
                reqs[i + 1..]
                    .iter()
                    .all(|later| later.header("mcp-session-id") != sid),
                "{}",
                fx.summary()
            );
        }
    }

    // A server that refuses DELETE (405) is fine.
    let fx = HttpFixture::mcp(McpScript::new().sessions().delete_status(405));
    let dir = setup_legacy("http_delete_405", &fx.url());
    let out = call_hi(&dir, &[]);
    assert_eq!(out.stderr, "");
    let last = fx.requests().pop().unwrap();
    assert_eq!((last.method.as_str(), last.status), ("DELETE", Some(405)));
}

#[test]
fn localhost_resolves_to_loopback() {
    let fx = HttpFixture::mcp(McpScript::new().sessions());
    let url = format!("http://localhost:{}/mcp", fx.port());
    let dir = setup_legacy("http_localhost", &url);
    call_hi(&dir, &[]);
    let reqs = fx.requests();
    assert_eq!(reqs.len(), 5, "{}", fx.summary());
    assert_eq!(
        reqs[0].header("host"),
        Some(format!("localhost:{}", fx.port()).as_str())
    );
}

#[test]
fn proxy_variables_do_not_carry_loopback_traffic() {
    let fx = HttpFixture::mcp(McpScript::new().sessions());
    let proxy = HttpFixture::ok();
    let proxy_url = format!("http://127.0.0.1:{}", proxy.port());
    for host in ["127.0.0.1", "localhost"] {
        let url = format!("http://{host}:{}/mcp", fx.port());
        let dir = setup_legacy("http_proxy", &url);
        let mut c = cmd(&dir, &["call", "mcp__web__echo", "text=hi"]);
        for var in [
            "HTTP_PROXY",
            "http_proxy",
            "HTTPS_PROXY",
            "https_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            c.env(var, &proxy_url);
        }
        let out = c.assert_exit(0);
        assert_eq!(out.stdout, "hi\n");
    }
    assert_eq!(proxy.requests().len(), 0, "{}", proxy.summary());
    assert_eq!(fx.posts_of("tools/call").len(), 2);
}

#[test]
fn batch_body_on_2025_03_26_is_accepted() {
    let script = McpScript::new().protocol("2025-03-26").batch_tools_list();
    let fx = HttpFixture::mcp(script);
    let dir = setup_legacy("http_batch_old", &fx.url());
    let out = cmd(&dir, &["list", "web"]).assert_exit(0);
    assert_eq!(
        out.stdout,
        LIST_OUT.replace("protocol 2025-11-25", "protocol 2025-03-26")
    );
    call_hi(&dir, &[]);
    // The negotiated version is what later requests carry.
    let call = one_post(&fx, "tools/call");
    assert_eq!(call.header("mcp-protocol-version"), Some("2025-03-26"));
}

#[test]
fn batch_body_on_2025_11_25_is_an_error() {
    let fx = HttpFixture::mcp(McpScript::new().batch_tools_list());
    let dir = setup_legacy("http_batch_new", &fx.url());
    let out = cmd(&dir, &["list", "web"]).assert_exit(4);
    assert_eq!(out.stdout, "");
    assert_contains(&error_line(&out), "batch");
}

#[test]
fn non_message_events_are_ignored() {
    // A differently typed event carrying a bogus answer with the right
    // id, and an event without data, come before the real answer.
    let script = McpScript::new().sessions().call_preamble(
        "event: bogus\ndata: {\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":\
         {\"content\":[{\"type\":\"text\",\"text\":\"WRONG\"}]}}\n\n\
         event: endpoint\ndata: /messages\n\n\
         : a comment\n\n",
    );
    let fx = HttpFixture::mcp(script);
    let dir = setup_legacy("http_event_types", &fx.url());
    call_hi(&dir, &[]);
    assert_eq!(fx.posts_of("tools/call").len(), 1);
}

#[test]
fn expired_session_with_sse_answers() {
    let script = McpScript::new().sse().priming().expire_after(&[2]);
    let fx = HttpFixture::mcp(script);
    let dir = setup_legacy("http_expired_sse", &fx.url());
    call_hi(&dir, &[]);
    assert_eq!(fx.posts_of("initialize").len(), 2, "{}", fx.summary());
    let calls = fx.posts_of("tools/call");
    let sids: Vec<Option<&str>> =
        calls.iter().map(|r| r.header("mcp-session-id")).collect();
    assert_eq!(sids, [Some("sess-1"), Some("sess-2")]);
}

#[test]
fn sse_framing_split_across_writes_and_lines() {
    // The answer comes as `event: message`, with CRLF line ends, its JSON
    // split over two `data:` lines, the whole cut into small writes.
    let script = McpScript::new();
    let fx = HttpFixture::start(move |req, conn| {
        if req.rpc_method().as_deref() == Some("tools/call") {
            let answer = script.answer(&req.json()).to_string();
            // Split after the first comma, which is outside any string.
            let cut = answer.find(',').expect("a comma") + 1;
            let (a, b) = answer.split_at(cut);
            let text = format!(
                ": hello\r\nevent: message\r\nid: 5\r\ndata: {a}\r\ndata: {b}\
                 \r\n\r\n"
            );
            conn.sse(&[]);
            let pieces: Vec<&[u8]> = text.as_bytes().chunks(7).collect();
            conn.chunks(&pieces, Duration::from_millis(2));
        } else {
            script.handle(req, conn);
        }
    });
    let dir = setup_legacy("http_sse_framing", &fx.url());
    call_hi(&dir, &[]);
}

#[test]
fn oversized_sse_line_and_event_are_refused() {
    // One 200 KB line, then a 200 KB event in 10 KB lines, against
    // `--max-message 64K` (lines may be 1 KiB longer than messages).
    for (many_lines, want) in [
        (false, "event stream line longer than 66560 bytes"),
        (true, "event stream event data larger than 65536 bytes"),
    ] {
        let script = McpScript::new().sse();
        let fx = HttpFixture::start(move |req, conn| {
            if req.rpc_method().as_deref() != Some("tools/call") {
                return script.handle(req, conn);
            }
            let id = req.rpc_id().unwrap();
            let block = json!({"type": "text", "text": "y".repeat(10_000)});
            let blocks = vec![block.to_string(); 20];
            let sep = if many_lines { ",\ndata: " } else { "," };
            let text = format!(
                "data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":\
                 {{\"content\":[{}]}}}}\n\n",
                blocks.join(sep)
            );
            conn.sse(&[]);
            conn.write_raw(text.as_bytes());
        });
        let dir = setup_legacy("http_oversized_sse", &fx.url());
        let out = cmd(
            &dir,
            &["call", "mcp__web__echo", "text=hi", "--max-message", "64K"],
        )
        .assert_exit(4);
        assert_eq!(out.stdout, "");
        assert_contains(&error_line(&out), want);
    }
}

#[test]
fn unauthorized_mid_session_is_auth() {
    // The token stops working between tools/list and tools/call.
    let script = McpScript::new().sessions();
    let fx = HttpFixture::start(move |req, conn| {
        if req.rpc_method().as_deref() == Some("tools/call") {
            conn.respond(401, &[("www-authenticate", CHALLENGE)], b"");
        } else {
            script.handle(req, conn);
        }
    });
    let dir = setup_legacy("http_401_mid", &fx.url());
    let out = cmd(&dir, &["call", "mcp__web__echo", "text=hi"]).assert_exit(6);
    assert_contains(&error_line(&out), "authentication required (HTTP 401)");
    assert_eq!(fx.posts_of("tools/call").len(), 1, "{}", fx.summary());
    assert_eq!(fx.posts_of("initialize").len(), 1, "{}", fx.summary());
}

#[test]
fn retry_zero_cannot_make_the_client_spin() {
    // Every stream says `retry: 0`, gives an event id and ends without the
    // answer: the client reconnects a bounded number of times, each after
    // the documented floor of 100 ms, then fails.
    let script = McpScript::new();
    let hostile = |conn: &mut crate::util::http::Conn| {
        conn.sse(&[]);
        conn.write_raw(b"retry: 0\n\n");
        let note = json!({"jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": "working"}});
        conn.event(Some(RESUME_EVENT_ID), &note);
    };
    let fx = HttpFixture::start(move |req, conn| {
        if req.method == "GET"
            || req.rpc_method().as_deref() == Some("tools/call")
        {
            hostile(conn);
        } else {
            script.handle(req, conn);
        }
    });
    let dir = setup_legacy("http_retry_floor", &fx.url());
    let out = cmd(&dir, &["call", "mcp__web__echo", "text=hi"]).assert_exit(4);
    assert_contains(&error_line(&out), "ended 5 times before the response");
    let reqs = fx.requests();
    let gets: Vec<&Request> =
        reqs.iter().filter(|r| r.method == "GET").collect();
    assert_eq!(gets.len(), 5, "{}", fx.summary());
    let mut prev = one_post(&fx, "tools/call").done.unwrap();
    for get in gets {
        let gap = get.at.duration_since(prev);
        assert!(
            gap >= Duration::from_millis(100),
            "reconnected after {gap:?}"
        );
        prev = get.done.unwrap_or(get.at);
    }
}

// ---------------------------------------------------------------------------
// MCP 2026-07-28 (McpScript::modern)
// ---------------------------------------------------------------------------

#[test]
fn modern_one_shot_call_is_three_posts_with_the_modern_headers() {
    let fx = HttpFixture::mcp(McpScript::new().modern());
    let dir = setup_auto("http_modern_call", &fx.url());
    call_hi(&dir, &[]);
    // No initialize, no session, no DELETE: discover, list, call.
    assert_eq!(
        sequence(&fx),
        ["POST server/discover", "POST tools/list", "POST tools/call"],
        "{}",
        fx.summary()
    );
    for r in fx.requests() {
        let method = r.rpc_method().unwrap_or_default();
        assert_eq!(r.header_all("mcp-protocol-version"), ["2026-07-28"]);
        assert_eq!(r.header_all("mcp-method"), [method.as_str()], "{r:?}");
        assert_eq!(r.header("mcp-session-id"), None);
        let meta = &r.json()["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            // Elicitation is declared (the operator answers or declines);
            // sampling and roots only when the operator enables them.
            json!({"elicitation": {"form": {}, "url": {}}})
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"],
            "rivumi-mcp"
        );
        assert_eq!(r.status, Some(200), "{r:?}");
    }
    let call = one_post(&fx, "tools/call");
    assert_eq!(call.header_all("mcp-name"), ["echo"]);
    assert_eq!(one_post(&fx, "tools/list").header("mcp-name"), None);
}

#[test]
fn modern_list_json_says_which_protocol_and_server() {
    let fx = HttpFixture::mcp(McpScript::new().modern());
    let dir = setup_auto("http_modern_list", &fx.url());
    let out = cmd(&dir, &["list", "web", "--json", "-v"]).assert_exit(0);
    let s = &out.stdout_json()["servers"][0];
    assert_eq!(s["protocol"], json!("2026-07-28"), "{s}");
    assert_eq!(s["serverInfo"]["name"], json!("modern-fixture"), "{s}");
    assert_eq!(s["instructions"], json!("modern fixture"), "{s}");
    assert_contains(
        &out.stderr,
        "server 'web': discovered, protocol 2026-07-28 (server/discover \
         answered)",
    );
}

#[test]
fn modern_input_required_is_retried_with_a_new_id_and_the_state() {
    let fx = HttpFixture::mcp(McpScript::new().modern());
    let dir = setup_auto("http_modern_mrtr", &fx.url());
    let out = cmd(&dir, &["call", "mcp__web__confirm"]).assert_exit(0);
    // The retry carried the answers and the state, byte for byte.
    assert_eq!(out.stdout, "{\"ok\":{\"action\":\"decline\"}} \"st-1\"\n");
    assert_contains(
        &out.stderr,
        "server 'web' asked for a form (Go on?); declined: no terminal to ask",
    );
    let calls = fx.posts_of("tools/call");
    assert_eq!(calls.len(), 2, "{}", fx.summary());
    let (first, retry) = (calls[0].json(), calls[1].json());
    assert_ne!(first["id"], retry["id"]);
    assert!(first["params"].get("requestState").is_none());
    assert!(first["params"].get("inputResponses").is_none());
    assert_eq!(retry["params"]["requestState"], json!("st-1"));
    assert_eq!(
        retry["params"]["inputResponses"],
        json!({"ok": {"action": "decline"}})
    );
    assert_eq!(retry["params"]["name"], first["params"]["name"]);
}

#[test]
fn a_modern_only_server_asked_for_the_handshake_says_so() {
    let fx = HttpFixture::mcp(McpScript::new().modern());
    let dir = setup_legacy("http_modern_forced_legacy", &fx.url());
    let out = cmd(&dir, &["list", "web"]).assert_exit(4);
    let line = error_line(&out);
    assert_contains(&line, "-32022 (UnsupportedProtocolVersion)");
    assert_contains(&line, "the server speaks 2026-07-28 only");
    assert_absent(&line, "HTTP+SSE");
    assert_eq!(sequence(&fx), ["POST initialize"], "{}", fx.summary());
    // --protocol overrides the config.
    let out = cmd(&dir, &["list", "web", "--protocol", "auto"]).assert_exit(0);
    assert_contains(&out.stdout, "(protocol 2026-07-28)");
}

#[test]
fn protocol_modern_against_a_2025_server_fails_clearly() {
    let fx = HttpFixture::mcp(McpScript::new().sessions());
    let dir = setup_auto("http_forced_modern", &fx.url());
    let out =
        cmd(&dir, &["list", "web", "--protocol", "modern"]).assert_exit(4);
    assert_contains(&error_line(&out), "HTTP 400");
    assert_eq!(sequence(&fx), ["POST server/discover"], "{}", fx.summary());
    let out =
        cmd(&dir, &["list", "web", "--protocol", "sometimes"]).assert_exit(2);
    assert_contains(&out.stderr, "unknown protocol 'sometimes'");
}

#[test]
fn batch_relists_when_the_modern_ttl_has_expired() {
    let lines = "{\"id\":1,\"tool\":\"mcp__web__echo\",\"arguments\":{\"text\":\"a\"}}\n\
                 {\"id\":2,\"tool\":\"mcp__web__echo\",\"arguments\":{\"text\":\"b\"}}\n";
    // ttlMs 0: the list is stale at once, so each call lists again.
    let fx = HttpFixture::mcp(McpScript::new().modern());
    let dir = setup_auto("http_modern_batch_ttl", &fx.url());
    let out = cmd(&dir, &["batch"]).stdin(lines).assert_exit(0);
    assert_eq!(out.stdout.lines().count(), 2, "{out:?}");
    assert_eq!(fx.posts_of("tools/list").len(), 2, "{}", fx.summary());
    // A 2025 server gives no ttl: one listing serves the whole batch.
    let fx = HttpFixture::mcp(McpScript::new());
    let dir = setup_legacy("http_batch_no_ttl", &fx.url());
    cmd(&dir, &["batch"]).stdin(lines).assert_exit(0);
    assert_eq!(fx.posts_of("tools/list").len(), 1, "{}", fx.summary());
}

#[test]
fn a_modern_reply_carries_its_own_headers_not_the_requests() {
    let script = McpScript::new().modern();
    let fx = HttpFixture::start(move |req, conn| {
        let msg = req.json();
        let is_reply = req.method == "POST"
            && msg.get("id").is_some()
            && msg.get("method").is_none();
        if is_reply {
            conn.empty(202);
            return;
        }
        if req.method == "POST" && msg["method"] == "tools/call" {
            let id = msg["id"].clone();
            conn.sse(&[]);
            conn.event(
                None,
                &json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}),
            );
            conn.wait_for(Duration::from_secs(5), |rs| {
                rs.iter().any(|r| r.json().get("id") == Some(&json!("srv-1")))
            });
            conn.event(
                None,
                &json!({"jsonrpc": "2.0", "id": id, "result": {
                "resultType": "complete",
                "content": [{"type": "text", "text": "hi"}]}}),
            );
            return;
        }
        script.handle(req, conn);
    });
    let dir = setup_auto("http_modern_reply_headers", &fx.url());
    let _ = cmd(&dir, &["call", "mcp__web__echo", "text=hi"]).run();
    let replies: Vec<Request> = fx
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.is_rpc_response())
        .collect();
    assert_eq!(replies.len(), 1, "{}", fx.summary());
    let r = &replies[0];
    assert_eq!(r.header("mcp-method"), None, "reply carried {:?}", r.headers);
    assert_eq!(r.header("mcp-name"), None, "reply carried {:?}", r.headers);
    assert_eq!(r.header_all("mcp-protocol-version"), ["2026-07-28"]);
}

/// A connection idle for longer than common servers keep it open (5 s
/// for Node and uvicorn) is not written on again: a server that closes
/// it as the request arrives would reset a call nothing can retry. Here
/// the fixture drops, unanswered, any request on a connection idle for
/// 3.5 s; the second line of a batch comes 4 s after the first.
#[test]
fn an_idle_connection_is_not_reused_after_servers_close_theirs() {
    let script = McpScript::new();
    let fx = HttpFixture::start(move |req, conn| {
        let idle = conn
            .requests()
            .iter()
            .filter(|r| r.conn == req.conn && r.at < req.at)
            .filter_map(|r| r.done)
            .max()
            .map(|done| req.at.saturating_duration_since(done));
        if idle.is_some_and(|d| d >= Duration::from_millis(3500)) {
            conn.close();
            return;
        }
        script.handle(req, conn);
    });
    let dir = setup_legacy("http_idle_reuse", &fx.url());
    let mut child = cmd(&dir, &["batch"]).spawn();
    let mut stdin = child.stdin.take().unwrap();
    let line = |text: &str| {
        format!(
            "{{\"tool\":\"mcp__web__echo\",\"arguments\":{{\"text\":\"{text}\"}}}}\n"
        )
    };
    std::io::Write::write_all(&mut stdin, line("a").as_bytes()).unwrap();
    std::thread::sleep(Duration::from_secs(4));
    std::io::Write::write_all(&mut stdin, line("b").as_bytes()).unwrap();
    drop(stdin);
    let out = crate::util::wait_with_timeout(child, &cmd(&dir, &["batch"]));
    assert_eq!(out.code, Some(0), "{out:?}\n{}", fx.summary());
    let texts: Vec<String> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            v["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(texts, ["a", "b"], "{out:?}");
}
