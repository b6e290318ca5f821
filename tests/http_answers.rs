//! What the HTTP transport makes of answers a server gives in the wild,
//! through the real binary against the scripted server of
//! `util/http.rs`: `--protocol auto` facing a 2025 server that answers the
//! 2026-07-28 probe with a 5xx, an HTML page or a stream without a
//! response (it speaks the handshake era); a modern-era error the
//! handshake era would avoid (it says so); a server of the deprecated
//! HTTP+SSE transport (named as such); and a log line that arrives on the
//! standalone stream just after the result (shown, not lost).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::http::{Conn, HttpFixture, McpScript, Request};
use crate::util::web::{cmd, error_line, sequence, setup_auto, setup_legacy};
use crate::util::{assert_absent, assert_contains};

/// Ways a 2025 server answers a modern request that are no 2026-07-28
/// answer: each must lead `auto` to the handshake era.
fn odd_probe_answer(kind: &str, conn: &mut Conn) {
    match kind {
        // @cyanheads/git-mcp-server 2.15.3, verbatim.
        "500-json" => conn.json(
            500,
            &[],
            &json!({"jsonrpc": "2.0", "error": {"code": -32603,
                "message": "Error in httpTransport: "}, "id": null}),
        ),
        "502-text" => conn.respond(
            502,
            &[("content-type", "text/plain")],
            b"Bad Gateway",
        ),
        "200-html" => conn.respond(
            200,
            &[("content-type", "text/html; charset=utf-8")],
            b"<!DOCTYPE html><html><body>Welcome</body></html>",
        ),
        "stream-without-response" => {
            conn.sse(&[]);
            conn.write_raw(b": hello\n\n");
        }
        "202-nothing" => conn.empty(202),
        "error-not-listing-modern" => conn.json(
            200,
            &[],
            &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32600,
                "message": "Bad Request: Server not initialized"}}),
        ),
        other => panic!("unknown kind {other}"),
    }
}

#[test]
fn auto_speaks_the_handshake_era_when_the_probe_answer_is_not_modern() {
    for kind in [
        "500-json",
        "502-text",
        "200-html",
        "stream-without-response",
        "202-nothing",
        "error-not-listing-modern",
    ] {
        let script = McpScript::new().sessions();
        let fx = HttpFixture::start(move |req, conn| {
            if req.rpc_method().as_deref() == Some("server/discover") {
                odd_probe_answer(kind, conn);
            } else {
                script.handle(req, conn);
            }
        });
        let dir = setup_auto("http_answers_probe", &fx.url());
        let out = cmd(&dir, &["list", "web"]).run();
        assert_eq!(out.code, Some(0), "{kind}: {out:?}\n{}", fx.summary());
        assert_contains(&out.stdout, "(protocol 2025-11-25)");
        let seq = sequence(&fx);
        assert_eq!(
            seq[..2],
            ["POST server/discover", "POST initialize"],
            "{kind}: {}",
            fx.summary()
        );
        // `-v` says why.
        let out = cmd(&dir, &["list", "web", "-v"]).assert_exit(0);
        assert_contains(&out.stderr, "trying initialize");
    }
}

#[test]
fn auto_still_fails_when_the_server_cannot_be_reached() {
    // Nothing listens there: no era would fare better, one clear line.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = setup_auto(
        "http_answers_unreachable",
        &format!("http://127.0.0.1:{port}/mcp"),
    );
    let out = cmd(&dir, &["list", "web"]).assert_exit(4);
    let line = error_line(&out);
    assert_contains(&line, "cannot reach");
    assert_absent(&line, "initialize");
}

/// A 2026-07-28 server whose `tools/call` fails with `message`.
fn modern_call_fails(message: &'static str) -> HttpFixture {
    let script = McpScript::new().modern();
    HttpFixture::start(move |req, conn| {
        if req.rpc_method().as_deref() == Some("tools/call") {
            let id = req.rpc_id().unwrap_or(Value::Null);
            conn.json(
                200,
                &[],
                &json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": -32600, "message": message}}),
            );
        } else {
            script.handle(req, conn);
        }
    })
}

#[test]
fn a_modern_error_the_handshake_era_avoids_suggests_legacy() {
    // The Python SDK over 2026-07-28 HTTP cannot ask its client anything
    // from a tool; the handshake era's streams can.
    let fx = modern_call_fails(
        "Cannot send 'elicitation/create': this transport context has no \
         back-channel for server-initiated requests.",
    );
    let dir = setup_auto("http_answers_back_channel", &fx.url());
    let out = cmd(&dir, &["call", "mcp__web__echo", "text=hi"]).assert_exit(4);
    let line = error_line(&out);
    assert_contains(&line, "no back-channel");
    assert_contains(&line, "--protocol legacy");
    // An ordinary modern error gets no such hint.
    let fx = modern_call_fails("the tool broke");
    let dir = setup_auto("http_answers_plain_error", &fx.url());
    let out = cmd(&dir, &["call", "mcp__web__echo", "text=hi"]).assert_exit(4);
    let line = error_line(&out);
    assert_contains(&line, "the tool broke");
    assert_absent(&line, "--protocol legacy");
}

/// A server of the deprecated HTTP+SSE transport (2024-11-05), as the
/// TypeScript SDK's `simpleSseServer.js` is: `GET /mcp` opens the stream
/// and names the POST endpoint in an `endpoint` event; a POST to `/mcp`
/// gets Express's HTML 404 (or `post_status`).
fn legacy_sse_server(post_status: u16, endpoint_event: bool) -> HttpFixture {
    HttpFixture::start(move |req: &Request, conn: &mut Conn| {
        match req.method.as_str() {
            "GET" if req.path == "/mcp" => {
                conn.sse(&[]);
                if endpoint_event {
                    conn.write_raw(
                        b"event: endpoint\ndata: /messages?sessionId=\
                          secret-7f3a\n\n",
                    );
                }
                while conn.alive() {
                    conn.sleep(Duration::from_millis(200));
                    conn.write_raw(b": keep-alive\n\n");
                }
            }
            _ if post_status == 404 => conn.respond(
                404,
                &[("content-type", "text/html; charset=utf-8")],
                b"<!DOCTYPE html><html><body><pre>Cannot POST /mcp</pre>\
                  </body></html>",
            ),
            _ => conn.respond(
                post_status,
                &[("content-type", "text/plain")],
                b"Method Not Allowed",
            ),
        }
    })
}

#[test]
fn a_legacy_http_sse_server_is_named_as_such() {
    for (status, endpoint, protocol) in [
        (404, true, "auto"),
        (405, true, "auto"),
        (404, false, "auto"),
        (404, true, "legacy"),
        (405, true, "modern"),
    ] {
        let fx = legacy_sse_server(status, endpoint);
        let dir = setup_auto("http_answers_legacy_sse", &fx.url());
        let out =
            cmd(&dir, &["list", "web", "--protocol", protocol]).assert_exit(4);
        let line = error_line(&out);
        let case = format!("{status} {endpoint} {protocol}: {line}");
        assert!(line.starts_with("rivumi-mcp: server 'web': "), "{case}");
        assert!(line.contains("deprecated HTTP+SSE transport"), "{case}");
        assert!(line.contains("not supported"), "{case}");
        assert!(line.contains("Streamable HTTP"), "{case}");
        assert!(!line.contains("no MCP endpoint"), "{case}");
        // The stream's session id is the server's secret: never shown.
        assert!(!line.contains("secret-7f3a"), "{case}");
        if endpoint {
            assert!(line.contains("'/messages'"), "{case}");
        }
        // One look at the stream, however many POSTs were refused.
        let gets = fx.standalone_gets().len();
        assert_eq!(gets, 1, "{case}\n{}", fx.summary());
    }
}

#[test]
fn a_404_web_page_without_a_stream_is_still_no_mcp_endpoint() {
    let fx = HttpFixture::start(|_, conn| {
        conn.respond(
            404,
            &[("content-type", "text/html")],
            b"<html>Not Found</html>",
        );
    });
    let dir = setup_auto("http_answers_plain_404", &fx.url());
    let out = cmd(&dir, &["list", "web"]).assert_exit(4);
    let line = error_line(&out);
    assert_contains(&line, "no MCP endpoint at this URL");
    assert_absent(&line, "HTTP+SSE");
}

#[test]
fn a_log_line_just_before_the_result_is_not_lost() {
    // The server logs on its standalone stream and answers the call on
    // the POST; the two race, and here the log line comes second.
    let script = McpScript::new().sessions();
    let answered = Arc::new(AtomicBool::new(false));
    let flag = answered.clone();
    let fx = HttpFixture::start(move |req, conn| {
        if req.is_standalone_get() {
            conn.sse(&[]);
            while conn.alive() && !flag.load(Ordering::SeqCst) {
                conn.sleep(Duration::from_millis(2));
            }
            let note = json!({"jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "almost done"}});
            conn.event(None, &note);
            conn.sleep(Duration::from_secs(3));
            return;
        }
        script.handle(req, conn);
        if req.rpc_method().as_deref() == Some("tools/call") {
            flag.store(true, Ordering::SeqCst);
        }
    });
    let dir = setup_legacy("http_answers_last_log", &fx.url());
    for _ in 0..3 {
        answered.store(false, Ordering::SeqCst);
        let out = cmd(
            &dir,
            &["call", "mcp__web__echo", "text=hi", "--log-level", "info"],
        )
        .assert_exit(0);
        assert_eq!(out.stdout, "hi\n");
        assert_contains(&out.stderr, "[web] info: almost done");
    }
}
