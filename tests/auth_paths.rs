//! The opt-in authorization paths through the real binary, against the
//! configurable [`OAuthSite`] of `util/oauth.rs`: discovery from the MCP
//! server (RFC 9728, the 2025-03-26 fallbacks), scope selection, step-up,
//! dynamic registration and client metadata documents, `login --refresh`
//! (and two of them racing for a strictly rotating refresh token), and the
//! client-credentials grant. Each test asserts the outcome and what the
//! fixtures saw on the wire.

use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use crate::util::http::Request;
use crate::util::oauth::{
    CLIENT, HINTED_PRM_PATH, LIST_OUT, LOGIN_ARGS, OAuthSite, PrmAt,
    SiteOptions, browser_url, config, creds, expire_stored_token, form_decode,
    last_line, open_this, param, query, read_json, wait_until, web_command,
    write_browser,
};
use crate::util::{Dir, Output, TestCommand, assert_contains};

/// A client secret that needs form-encoding inside HTTP Basic.
const SECRET: &str = "sec:ret/+1";

/// The variable the secret is configured in.
const SECRET_VAR: &str = "RIVUMI_TEST_SECRET";

/// An https client id (a client metadata document URL).
const CIMD_ID: &str = "https://client.example/rivumi-mcp.json";

/// `rivumi-mcp ARGS` with `web` allowed, the test browser, the secret and
/// the credential file in the Dir.
fn cmd(dir: &Dir, args: &[&str]) -> TestCommand {
    let mut c = web_command(dir, args);
    c.env(SECRET_VAR, SECRET);
    c
}

/// `login web` with a callback deadline that fails fast.
fn login(dir: &Dir) -> TestCommand {
    cmd(dir, LOGIN_ARGS)
}

/// A Dir with the scripted browser.
fn new_dir(test: &str) -> Dir {
    let dir = Dir::new(test);
    write_browser(&dir, "");
    dir
}

/// A Dir with the scripted browser and server `web` at `mcp` with this
/// `oauth` block.
fn web_dir(test: &str, mcp: &OAuthSite, oauth: Value) -> Dir {
    let dir = new_dir(test);
    config(&dir, &mcp.url(), oauth);
    dir
}

/// An authorization server with `auth`, and an MCP server that names it
/// in its hinted metadata and accepts its tokens, changed by `mcp`.
fn pair(
    auth: SiteOptions,
    mcp: impl FnOnce(SiteOptions) -> SiteOptions,
) -> (OAuthSite, OAuthSite) {
    let a = OAuthSite::start(auth);
    let m = OAuthSite::start(mcp(SiteOptions::mcp_for(&a)));
    (a, m)
}

/// The default pair.
fn default_pair() -> (OAuthSite, OAuthSite) {
    pair(SiteOptions::auth_server(), |m| m)
}

/// The opt-in discovery: a client id and nothing about the server.
fn bare() -> Value {
    json!({"client_id": CLIENT})
}

/// `oauth` with the keys of `extra` added (or replaced).
fn with(mut oauth: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        oauth[k] = v.clone();
    }
    oauth
}

/// How many times the browser finished (`done` in its log).
fn browser_runs(dir: &Dir) -> usize {
    std::fs::read_to_string(dir.path("browser.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == "done")
        .count()
}

/// Waits until the browser has finished `n` times, and checks it was not
/// started more often.
#[track_caller]
fn assert_browser_runs(dir: &Dir, n: usize) {
    assert!(
        wait_until(Duration::from_secs(10), || browser_runs(dir) >= n),
        "the browser finished {} times, not {n}",
        browser_runs(dir)
    );
    std::thread::sleep(Duration::from_millis(50));
    let log =
        std::fs::read_to_string(dir.path("browser.log")).unwrap_or_default();
    let want: Vec<&str> =
        ["callback 200", "done"].into_iter().cycle().take(2 * n).collect();
    assert_eq!(log.lines().collect::<Vec<_>>(), want);
}

/// The `scope` parameter of an authorization request.
fn scope_of(r: &Request) -> Option<String> {
    let q = query(&r.path);
    let v: Vec<String> = q
        .iter()
        .filter(|(k, _)| k == "scope")
        .map(|(_, v)| v.clone())
        .collect();
    assert!(v.len() <= 1, "{q:?}");
    v.into_iter().next()
}

/// The names of a token request's form, in order.
fn form_names(r: &Request) -> Vec<String> {
    form_decode(&r.body).into_iter().map(|(k, _)| k).collect()
}

/// `Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1).
fn basic(id_enc: &str, secret_enc: &str) -> String {
    let b = base64::engine::general_purpose::STANDARD
        .encode(format!("{id_enc}:{secret_enc}"));
    format!("Basic {b}")
}

/// The stored entry of `web`.
fn entry(dir: &Dir) -> Value {
    read_json(&creds(dir))["servers"]["web"].clone()
}

/// The `Authorization` headers of the MCP POSTs from index `from` on.
fn bearers_from(mcp: &OAuthSite, from: usize) -> Vec<Option<String>> {
    mcp.mcp_requests()[from..]
        .iter()
        .map(|r| r.header("authorization").map(str::to_string))
        .collect()
}

/// Runs `list web` with the stored token and checks what it prints and
/// that every MCP POST it made carried `Bearer TOKEN`; returns its output.
#[track_caller]
fn list_with_token(dir: &Dir, mcp: &OAuthSite, token: &str) -> Output {
    let n = mcp.mcp_requests().len();
    let out = cmd(dir, &["list", "web"]).assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
    let sent = bearers_from(mcp, n);
    assert!(!sent.is_empty());
    let want = format!("Bearer {token}");
    assert!(
        sent.iter().all(|b| b.as_deref() == Some(want.as_str())),
        "{sent:?}"
    );
    out
}

/// Every response status the site gave for `METHOD path` lines.
fn statuses(site: &OAuthSite) -> Vec<(String, Option<u16>)> {
    site.requests()
        .iter()
        .map(|r| {
            let p = r.path.split('?').next().unwrap_or("");
            (format!("{} {p}", r.method), r.status)
        })
        .collect()
}

fn line(s: &str, status: u16) -> (String, Option<u16>) {
    (s.to_string(), Some(status))
}

// ---------------------------------------------------------------------------
// Discovery from the MCP server
// ---------------------------------------------------------------------------

#[test]
fn discovery_follows_the_resource_metadata_of_the_401() {
    let (auth, mcp) = default_pair();
    let dir = web_dir("auth_paths_hinted", &mcp, bare());
    let out = login(&dir).assert_exit(0);
    let url = browser_url(&dir).expect("the browser was started");
    assert_eq!(out.stderr, open_this(&url));
    assert_browser_runs(&dir, 1);
    // One unauthenticated POST, then the hinted metadata only: no
    // well-known URL is tried when the challenge names one.
    assert_eq!(
        statuses(&mcp),
        [line("POST /mcp", 401), line(&format!("GET {HINTED_PRM_PATH}"), 200)]
    );
    assert_eq!(mcp.requests()[0].header("authorization"), None);
    assert_eq!(
        statuses(&auth),
        [
            line("GET /.well-known/oauth-authorization-server", 200),
            line("GET /authorize", 302),
            line("POST /token", 200),
        ]
    );
    let q = query(&auth.authorize_requests()[0].path);
    assert_eq!(param(&q, "client_id"), CLIENT);
    assert_eq!(param(&q, "resource"), mcp.url());
    assert_eq!(param(&q, "scope"), "mcp:tools");
    assert!(url.starts_with(&format!("{}/authorize?", auth.issuer())));
    let e = entry(&dir);
    assert_eq!(e["url"], json!(mcp.url()));
    // The issuer as its metadata published it.
    assert_eq!(e["issuer"], json!(auth.issuer()));
    assert_eq!(e["token_endpoint"], json!(format!("{}/token", auth.issuer())));
    assert_eq!(e["access_token"], json!("at-1"));

    let out = list_with_token(&dir, &mcp, "at-1");
    assert_eq!(out.stderr, "");
}

#[test]
fn discovery_tries_the_path_suffixed_then_the_root_well_known_url() {
    let suffixed = "GET /.well-known/oauth-protected-resource/mcp";
    let root = "GET /.well-known/oauth-protected-resource";
    for (at, want) in [
        (PrmAt::Root, vec![line(suffixed, 404), line(root, 200)]),
        (PrmAt::PathSuffixed, vec![line(suffixed, 200)]),
    ] {
        let (auth, mcp) =
            pair(SiteOptions::auth_server(), |m| SiteOptions { prm: at, ..m });
        let dir = web_dir("auth_paths_well_known", &mcp, bare());
        login(&dir).assert_exit(0);
        let mut all = vec![line("POST /mcp", 401)];
        all.extend(want);
        assert_eq!(statuses(&mcp), all, "{at:?}");
        assert_eq!(auth.authorize_requests().len(), 1, "{at:?}");
        assert_eq!(entry(&dir)["access_token"], json!("at-1"), "{at:?}");
        cmd(&dir, &["list", "web"]).assert_exit(0);
    }
}

#[test]
fn metadata_for_another_resource_is_refused_before_authorizing() {
    // The resource must be the server's origin with a path prefix of its
    // path on a segment boundary.
    let other_origin = OAuthSite::start(SiteOptions::default());
    for (prm, resource, refused) in [
        (PrmAt::Hinted, format!("{}/mcp", other_origin.issuer()), true),
        (PrmAt::PathSuffixed, format!("{}/mcp", other_origin.issuer()), true),
        (PrmAt::Hinted, "{base}/mc".to_string(), true),
        (PrmAt::Hinted, "{base}/other".to_string(), true),
        (PrmAt::Hinted, "{base}".to_string(), false),
    ] {
        let auth = OAuthSite::start(SiteOptions::auth_server());
        let mcp = OAuthSite::start(SiteOptions {
            prm,
            prm_resource: Some(resource.clone()),
            ..SiteOptions::mcp_for(&auth)
        });
        let resource = resource.replace("{base}", &mcp.issuer());
        let dir = web_dir("auth_paths_other_resource", &mcp, bare());
        if !refused {
            login(&dir).assert_exit(0);
            assert_eq!(auth.authorize_requests().len(), 1);
            continue;
        }
        let out = login(&dir).assert_exit(4);
        let source = match prm {
            PrmAt::Hinted => format!("{}{HINTED_PRM_PATH}", mcp.issuer()),
            _ => format!(
                "{}/.well-known/oauth-protected-resource/mcp",
                mcp.issuer()
            ),
        };
        assert_eq!(
            out.stderr,
            format!(
                "rivumi-mcp: server 'web': protected resource metadata at \
                 {source} is for '{resource}', not for {}; refusing to \
                 authorize (RFC 9728 §3.3)\n",
                mcp.url()
            )
        );
        assert_eq!(out.stdout, "");
        // No authorization request: the authorization server saw nothing
        // and the browser was never started.
        assert!(auth.requests().is_empty(), "{}", auth.summary());
        assert!(other_origin.requests().is_empty());
        assert_eq!(browser_url(&dir), None);
        assert!(!creds(&dir).exists());
    }
}

#[test]
fn discovered_authorization_server_must_name_its_issuer_and_support_s256() {
    for wrong_issuer in [true, false] {
        let opts = if wrong_issuer {
            SiteOptions {
                metadata_issuer: Some("https://evil.example".into()),
                ..SiteOptions::auth_server()
            }
        } else {
            SiteOptions { s256: false, ..SiteOptions::auth_server() }
        };
        let (auth, mcp) = pair(opts, |m| m);
        let dir = web_dir("auth_paths_as_checks", &mcp, bare());
        let out = login(&dir).assert_exit(4);
        let iss = auth.issuer();
        let what = format!(
            "rivumi-mcp: server 'web': authorization server metadata at \
             {iss}/.well-known/oauth-authorization-server: "
        );
        let want = if wrong_issuer {
            format!(
                "{what}its issuer 'https://evil.example' is not the issuer \
                 '{iss}/' asked for; refusing it (RFC 8414 §3.3)\n"
            )
        } else {
            format!(
                "{what}the authorization server does not list S256 in \
                 code_challenge_methods_supported, so PKCE cannot be used; \
                 refusing to log in (MCP 2025-11-25)\n"
            )
        };
        assert_eq!(out.stderr, want);
        assert_eq!(
            statuses(&auth),
            [line("GET /.well-known/oauth-authorization-server", 200)]
        );
        assert_eq!(browser_url(&dir), None);
        assert!(!creds(&dir).exists());
    }
}

#[test]
fn a_2025_03_26_server_with_metadata_at_its_origin() {
    let site = OAuthSite::start(SiteOptions {
        authorization_server: true,
        mcp: true,
        prm: PrmAt::Nowhere,
        ..SiteOptions::default()
    });
    let dir = web_dir("auth_paths_2025_03_26", &site, bare());
    login(&dir).assert_exit(0);
    assert_browser_runs(&dir, 1);
    assert_eq!(
        statuses(&site),
        [
            line("POST /mcp", 401),
            line("GET /.well-known/oauth-protected-resource/mcp", 404),
            line("GET /.well-known/oauth-protected-resource", 404),
            line("GET /.well-known/oauth-authorization-server", 200),
            line("GET /authorize", 302),
            line("POST /token", 200),
        ]
    );
    let q = query(&site.authorize_requests()[0].path);
    assert_eq!(param(&q, "client_id"), CLIENT);
    assert_eq!(param(&q, "resource"), site.url());
    // No protected-resource scopes: no scope parameter.
    assert!(q.iter().all(|(k, _)| k != "scope"), "{q:?}");
    let e = entry(&dir);
    assert_eq!(e["issuer"], json!(site.issuer()));
    assert_eq!(e["token_endpoint"], json!(format!("{}/token", site.issuer())));
    let out = cmd(&dir, &["list", "web"]).assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
}

#[test]
fn a_2025_03_26_document_naming_another_origin_is_refused() {
    // Found at the MCP server's origin, it names an issuer elsewhere: an
    // unverified issuer (RFC 8414 §3.3) that would address assertions and
    // the iss check to another authorization server (a mix-up).
    let site = OAuthSite::start(SiteOptions {
        authorization_server: true,
        mcp: true,
        prm: PrmAt::Nowhere,
        metadata_issuer: Some("https://login.honest.example".into()),
        ..SiteOptions::default()
    });
    let dir = web_dir("auth_paths_2025_03_26_foreign_issuer", &site, bare());
    let out = login(&dir).assert_exit(4);
    assert_contains(
        &out.stderr,
        "its issuer is on another origin (https://login.honest.example)",
    );
    assert!(site.authorize_requests().is_empty(), "{}", site.summary());
    assert!(site.token_requests().is_empty());
    assert_eq!(browser_url(&dir), None);
    assert!(!creds(&dir).exists());
}

#[test]
fn no_metadata_at_all_uses_the_default_endpoints() {
    let site = OAuthSite::start(SiteOptions {
        authorization_server: true,
        as_metadata: false,
        mcp: true,
        prm: PrmAt::Nowhere,
        ..SiteOptions::default()
    });
    let dir = web_dir(
        "auth_paths_defaults",
        &site,
        json!({"registration": "dynamic"}),
    );
    login(&dir).assert_exit(0);
    assert_browser_runs(&dir, 1);
    assert_eq!(
        statuses(&site),
        [
            line("POST /mcp", 401),
            line("GET /.well-known/oauth-protected-resource/mcp", 404),
            line("GET /.well-known/oauth-protected-resource", 404),
            line("GET /.well-known/oauth-authorization-server", 404),
            line("POST /register", 201),
            line("GET /authorize", 302),
            line("POST /token", 200),
        ]
    );
    // Without metadata the server is taken to support only
    // client_secret_basic (RFC 8414's default).
    let reg = site.register_requests()[0].json();
    assert_eq!(
        reg["token_endpoint_auth_method"],
        json!("client_secret_basic")
    );
    let t = &site.token_requests()[0];
    assert_eq!(
        t.header("authorization"),
        Some(basic("dyn-1", "dyn-secret-1").as_str())
    );
    let e = entry(&dir);
    assert_eq!(e["issuer"], Value::Null);
    assert_eq!(e["client_id"], json!("dyn-1"));
    assert_eq!(e["token_endpoint"], json!(format!("{}/token", site.issuer())));
    let out = cmd(&dir, &["list", "web"]).assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
}

// ---------------------------------------------------------------------------
// Scopes
// ---------------------------------------------------------------------------

/// Logs in with discovery from an MCP server changed by `mcp` and an
/// `oauth` block of `bare()` plus `extra`; the `scope` parameter sent.
fn scope_sent(
    test: &str,
    auth: SiteOptions,
    mcp: impl FnOnce(SiteOptions) -> SiteOptions,
    extra: Value,
) -> Option<String> {
    let (auth, mcp) = pair(auth, mcp);
    let dir = web_dir(test, &mcp, with(bare(), extra));
    login(&dir).assert_exit(0);
    let a = auth.authorize_requests();
    assert_eq!(a.len(), 1, "{}", auth.summary());
    // The token carries what was asked for.
    let s = scope_of(&a[0]);
    assert_eq!(
        entry(&dir)["scope"],
        s.as_ref().map_or(Value::Null, |s| json!(s))
    );
    s
}

#[test]
fn configured_scopes_win_over_the_challenge() {
    // At login the probe's 401 is only discovery: its scope must not be
    // added to what the operator configured (a step-up challenge adds
    // scopes; see insufficient_scope_on_a_call_runs_a_second_authorization).
    let s = scope_sent(
        "auth_paths_scope_configured",
        SiteOptions::auth_server(),
        |m| SiteOptions {
            challenge_scope: Some("chal:a chal:b".into()),
            prm_scopes: vec!["prm:s".into()],
            ..m
        },
        json!({"scopes": ["conf:x"]}),
    );
    assert_eq!(s.as_deref(), Some("conf:x"));
}

#[test]
fn the_challenge_scope_when_nothing_is_configured() {
    let s = scope_sent(
        "auth_paths_scope_challenge",
        SiteOptions::auth_server(),
        |m| SiteOptions {
            challenge_scope: Some("chal:a chal:b".into()),
            prm_scopes: vec!["prm:s".into()],
            ..m
        },
        json!({}),
    );
    assert_eq!(s.as_deref(), Some("chal:a chal:b"));
}

#[test]
fn the_resource_scopes_without_a_challenge_scope() {
    let s = scope_sent(
        "auth_paths_scope_prm",
        SiteOptions::auth_server(),
        |m| SiteOptions {
            prm_scopes: vec!["prm:s1".into(), "prm:s2".into()],
            ..m
        },
        json!({}),
    );
    assert_eq!(s.as_deref(), Some("prm:s1 prm:s2"));
}

#[test]
fn no_scope_parameter_without_any_source() {
    let s = scope_sent(
        "auth_paths_scope_none",
        SiteOptions::auth_server(),
        |m| SiteOptions { prm_scopes: vec![], ..m },
        json!({}),
    );
    assert_eq!(s, None);
}

#[test]
fn offline_access_only_with_the_opt_in_and_when_listed() {
    let listed = SiteOptions::auth_server;
    let unlisted = || SiteOptions {
        as_scopes: vec!["mcp:tools".into()],
        ..SiteOptions::auth_server()
    };
    for (auth, opt_in, want) in [
        (listed(), true, "mcp:tools offline_access"),
        (unlisted(), true, "mcp:tools"),
        (listed(), false, "mcp:tools"),
    ] {
        let s = scope_sent(
            "auth_paths_offline",
            auth,
            |m| m,
            json!({"offline_access": opt_in}),
        );
        assert_eq!(s.as_deref(), Some(want), "opt-in {opt_in}");
    }
}

#[test]
fn offline_access_with_a_dynamic_registration_registers_for_refresh() {
    let (auth, mcp) = pair(
        SiteOptions { registration: true, ..SiteOptions::auth_server() },
        |m| m,
    );
    let dir = web_dir(
        "auth_paths_offline_dcr",
        &mcp,
        json!({"registration": "dynamic", "offline_access": true}),
    );
    login(&dir).assert_exit(0);
    let a = auth.authorize_requests();
    assert_eq!(scope_of(&a[0]).as_deref(), Some("mcp:tools offline_access"));
    let body = auth.register_requests()[0].json();
    // SEP-2207: a client asking for offline_access registers for the
    // refresh grant; SEP-837: as a native application.
    assert_eq!(
        body["grant_types"],
        json!(["authorization_code", "refresh_token"]),
        "{body}"
    );
    assert_eq!(body["application_type"], json!("native"), "{body}");
}

#[test]
fn the_resource_is_sent_exactly_as_the_metadata_published_it() {
    // The metadata names the origin without a path (and without the `/` a
    // URL parser would add); the server itself is at /mcp.
    let (auth, mcp) = pair(
        SiteOptions { refresh_tokens: true, ..SiteOptions::auth_server() },
        |m| SiteOptions { prm_resource: Some("{base}".into()), ..m },
    );
    let dir = web_dir("auth_paths_resource_as_published", &mcp, bare());
    login(&dir).assert_exit(0);
    let published = mcp.issuer();
    assert!(!published.ends_with('/'), "{published}");
    let a = auth.authorize_requests();
    assert_eq!(param(&query(&a[0].path), "resource"), published);
    let t = &auth.token_requests()[0];
    assert_eq!(param(&form_decode(&t.body), "resource"), published);
    let e = entry(&dir);
    assert_eq!(e["url"], json!(mcp.url()));
    assert_eq!(e["resource"], json!(published));
    // The refresh asks for the same resource; the token is still sent
    // only to the server's URL.
    refresh(&dir).assert_exit(0);
    let t = &auth.token_requests()[1];
    assert_eq!(t.status, Some(200));
    assert_eq!(param(&form_decode(&t.body), "resource"), published);
    list_with_token(&dir, &mcp, "at-2");
}

// ---------------------------------------------------------------------------
// Step-up
// ---------------------------------------------------------------------------

#[test]
fn without_the_opt_in_a_401_is_an_error_with_a_hint() {
    let (auth, mcp) = default_pair();
    let dir = web_dir("auth_paths_no_step_up", &mcp, bare());
    let out = cmd(&dir, &["list", "web"]).assert_exit(6);
    assert_eq!(out.stdout, "");
    let want = format!(
        "rivumi-mcp: server 'web': authentication required (HTTP 401); \
         challenge: bearer (resource_metadata=\"{}{HINTED_PRM_PATH}\"); ",
        mcp.issuer()
    );
    assert!(out.stderr.starts_with(&want), "{}", out.stderr);
    assert_contains(&out.stderr, "run 'rivumi-mcp login ");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(auth.requests().is_empty(), "{}", auth.summary());
    assert_eq!(browser_url(&dir), None);
    assert_eq!(statuses(&mcp), [line("POST /mcp", 401)]);
    assert!(!creds(&dir).exists());
}

/// A `list` that authorizes inline: one browser run, one token, the
/// retried request and every later one with it.
fn assert_inline_list(
    dir: &Dir,
    auth: &OAuthSite,
    mcp: &OAuthSite,
    out: &Output,
) {
    assert_eq!(out.stdout, LIST_OUT);
    let url = browser_url(dir).expect("the browser was started");
    assert_eq!(out.stderr, open_this(&url));
    assert_browser_runs(dir, 1);
    assert_eq!(auth.authorize_requests().len(), 1, "{}", auth.summary());
    assert_eq!(auth.token_requests().len(), 1);
    // The challenge of the refused request was used: no separate probe.
    let sent = bearers_from(mcp, 0);
    assert_eq!(sent[0], None);
    assert!(sent.len() > 1);
    assert!(
        sent[1..].iter().all(|b| b.as_deref() == Some("Bearer at-1")),
        "{sent:?}"
    );
    // The 2026-07-28 probe meets the 401 and is sent again once
    // authorized; this 2025 server answers it with an error (200, -32601)
    // and the handshake follows with the new token.
    let posts = mcp.mcp_requests();
    let seen: Vec<(Option<String>, Option<u16>)> =
        posts.iter().map(|p| (p.rpc_method(), p.status)).collect();
    let m = |s: &str| Some(s.to_string());
    assert_eq!(
        seen[..3],
        [
            (m("server/discover"), Some(401)),
            (m("server/discover"), Some(200)),
            (m("initialize"), Some(200)),
        ]
    );
    assert_eq!(entry(dir)["access_token"], json!("at-1"));
}

#[test]
fn step_up_flag_authorizes_inline_and_retries() {
    let (auth, mcp) = default_pair();
    let dir = web_dir("auth_paths_step_up_flag", &mcp, bare());
    let out = cmd(&dir, &["list", "--step-up", "web"]).assert_exit(0);
    assert_inline_list(&dir, &auth, &mcp, &out);
}

#[test]
fn step_up_in_the_config_authorizes_inline_and_retries() {
    let (auth, mcp) = default_pair();
    let dir = web_dir(
        "auth_paths_step_up_config",
        &mcp,
        with(bare(), json!({"step_up": true})),
    );
    let out = cmd(&dir, &["list", "web"]).assert_exit(0);
    assert_inline_list(&dir, &auth, &mcp, &out);
}

#[test]
fn insufficient_scope_on_a_call_runs_a_second_authorization() {
    let (auth, mcp) = pair(SiteOptions::auth_server(), |m| SiteOptions {
        call_scopes: vec!["a".into(), "b".into()],
        ..m
    });
    let dir = web_dir("auth_paths_insufficient_scope", &mcp, bare());
    login(&dir).assert_exit(0);
    assert_eq!(entry(&dir)["scope"], json!("mcp:tools"));
    // Without the opt-in the 403 is an error.
    let out =
        cmd(&dir, &["call", "-y", "mcp__web__echo", "text=hi"]).assert_exit(6);
    assert_contains(&out.stderr, "insufficient scope (HTTP 403)");
    assert_eq!(auth.authorize_requests().len(), 1);

    let out =
        cmd(&dir, &["call", "--step-up", "-y", "mcp__web__echo", "text=hi"])
            .assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    assert_browser_runs(&dir, 2);
    let a = auth.authorize_requests();
    assert_eq!(a.len(), 2, "{}", auth.summary());
    // SEP-2350: what was granted, and what the 403 asked for.
    assert_eq!(scope_of(&a[1]).as_deref(), Some("mcp:tools a b"));
    let calls = call_posts(&mcp);
    let got: Vec<(Option<&str>, Option<u16>)> =
        calls.iter().map(|r| (r.header("authorization"), r.status)).collect();
    assert_eq!(
        got,
        [
            (Some("Bearer at-1"), Some(403)),
            (Some("Bearer at-1"), Some(403)),
            (Some("Bearer at-2"), Some(200)),
        ]
    );
    assert_eq!(entry(&dir)["access_token"], json!("at-2"));
}

/// The `tools/call` POSTs to an MCP site.
fn call_posts(mcp: &OAuthSite) -> Vec<Request> {
    mcp.mcp_requests()
        .into_iter()
        .filter(|r| r.rpc_method().as_deref() == Some("tools/call"))
        .collect()
}

#[test]
fn a_server_that_always_refuses_gets_three_authorizations_then_an_error() {
    let (auth, mcp) = pair(SiteOptions::auth_server(), |m| SiteOptions {
        refuse_all: true,
        ..m
    });
    let dir = web_dir("auth_paths_step_up_limit", &mcp, bare());
    let out = cmd(&dir, &["list", "--step-up", "web"]).assert_exit(6);
    assert_eq!(out.stdout, "");
    assert_eq!(
        last_line(&out),
        "rivumi-mcp: server 'web': the server still refuses (HTTP 401) \
         after 3 authorizations in this command; giving up"
    );
    assert_browser_runs(&dir, 3);
    assert_eq!(auth.authorize_requests().len(), 3, "{}", auth.summary());
    assert_eq!(auth.token_requests().len(), 3);
    let sent = bearers_from(&mcp, 0);
    assert_eq!(
        sent,
        [
            None,
            Some("Bearer at-1".to_string()),
            Some("Bearer at-2".to_string()),
            Some("Bearer at-3".to_string()),
        ]
    );
}

// ---------------------------------------------------------------------------
// Client registration and client metadata documents
// ---------------------------------------------------------------------------

#[test]
fn dynamic_registration_by_the_servers_auth_method() {
    for method in ["none", "client_secret_post", "client_secret_basic"] {
        let (auth, mcp) = pair(
            SiteOptions {
                registration: true,
                auth_methods: Some(vec![method.to_string()]),
                ..SiteOptions::auth_server()
            },
            |m| m,
        );
        let dir = web_dir(
            "auth_paths_dcr",
            &mcp,
            json!({"registration": "dynamic"}),
        );
        login(&dir).assert_exit(0);
        assert_browser_runs(&dir, 1);
        let r = auth.register_requests();
        assert_eq!(r.len(), 1, "{method}: {}", auth.summary());
        assert_eq!(r[0].method, "POST");
        assert_eq!(r[0].header("content-type"), Some("application/json"));
        let body = r[0].json();
        let a = auth.authorize_requests();
        let q = query(&a[0].path);
        let redirect_uri = param(&q, "redirect_uri");
        assert!(
            redirect_uri.starts_with("http://127.0.0.1:")
                && redirect_uri.ends_with("/callback"),
            "{redirect_uri}"
        );
        assert_eq!(body["client_name"], json!("rivumi-mcp"), "{body}");
        // SEP-837: a loopback CLI is a native application.
        assert_eq!(body["application_type"], json!("native"), "{body}");
        assert_eq!(body["redirect_uris"], json!([redirect_uri]), "{body}");
        let grants =
            body["grant_types"].as_array().cloned().unwrap_or_default();
        assert!(
            grants.contains(&json!("authorization_code"))
                && grants.contains(&json!("refresh_token")),
            "{body}"
        );
        assert_eq!(
            body["token_endpoint_auth_method"],
            json!(method),
            "{body}"
        );
        // The registered client is the one that authorizes.
        assert_eq!(param(&q, "client_id"), "dyn-1");
        let t = &auth.token_requests()[0];
        let f = form_decode(&t.body);
        match method {
            "none" => {
                assert_eq!(t.header("authorization"), None);
                assert_eq!(param(&f, "client_id"), "dyn-1");
                assert!(f.iter().all(|(k, _)| k != "client_secret"));
            }
            "client_secret_post" => {
                assert_eq!(t.header("authorization"), None);
                assert_eq!(param(&f, "client_id"), "dyn-1");
                assert_eq!(param(&f, "client_secret"), "dyn-secret-1");
            }
            _ => {
                assert_eq!(
                    t.header("authorization"),
                    Some(basic("dyn-1", "dyn-secret-1").as_str())
                );
                assert!(f.iter().all(|(k, _)| k != "client_secret"));
            }
        }
        assert_eq!(t.status, Some(200), "{method}");
        // Stored with the credential, bound to the issuer as its
        // metadata published it (no `/` added).
        let e = entry(&dir);
        let issuer = auth.issuer();
        assert_eq!(e["client_id"], json!("dyn-1"));
        assert_eq!(e["issuer"], json!(issuer));
        assert_eq!(e["registration"]["client_id"], json!("dyn-1"), "{e}");
        assert_eq!(e["registration"]["issuer"], json!(issuer), "{e}");
        assert_eq!(
            e["registration"]["token_endpoint_auth_method"],
            json!(method),
            "{e}"
        );

        // The next login reuses it.
        login(&dir).assert_exit(0);
        assert_browser_runs(&dir, 2);
        assert_eq!(auth.register_requests().len(), 1, "{method}");
        let a = auth.authorize_requests();
        assert_eq!(param(&query(&a[1].path), "client_id"), "dyn-1");
        assert_eq!(auth.token_requests()[1].status, Some(200), "{method}");
        assert_eq!(entry(&dir)["access_token"], json!("at-2"));
        let out = cmd(&dir, &["list", "web"]).assert_exit(0);
        assert_eq!(out.stdout, LIST_OUT);
    }
}

#[test]
fn no_client_id_without_the_opt_in_is_refused_and_registers_nothing() {
    let (auth, mcp) = pair(
        SiteOptions { registration: true, ..SiteOptions::auth_server() },
        |m| m,
    );
    let dir = new_dir("auth_paths_no_dcr");
    let want = "'oauth' needs 'client_id' (or the opt-in \"registration\": \
                \"dynamic\")";
    for oauth in [
        json!({"scopes": ["mcp:tools"]}),
        json!({"scopes": ["mcp:tools"], "registration": "none"}),
    ] {
        config(&dir, &mcp.url(), oauth);
        let out = cmd(&dir, &["check-config"]).assert_exit(1);
        assert_contains(
            &out.stdout,
            &format!(
                ".mcp.json:2:21: error: server 'web': {want} \
                 [/mcpServers/web/oauth]\n"
            ),
        );
        assert_contains(
            &out.stdout,
            ".mcp.json: 1 server, 1 error, 0 warnings: invalid\n",
        );
        let out = login(&dir).assert_exit(3);
        assert_eq!(
            out.stderr,
            format!(
                "rivumi-mcp: server 'web': invalid entry in .mcp.json at \
                 2:21: {want}\n"
            )
        );
        assert_eq!(out.stdout, "");
        // Nothing was asked of anyone, least of all /register.
        assert!(auth.requests().is_empty(), "{}", auth.summary());
        assert!(mcp.requests().is_empty(), "{}", mcp.summary());
        assert_eq!(browser_url(&dir), None);
        assert!(!creds(&dir).exists());
    }
}

/// Logs in with the https client id and a configured secret; returns the
/// token request.
fn https_client_id(test: &str, cimd: bool) -> (OAuthSite, Request) {
    let (auth, mcp) = pair(
        SiteOptions {
            cimd,
            registration: true,
            auth_methods: Some(vec![
                "none".into(),
                "client_secret_basic".into(),
            ]),
            clients: if cimd {
                vec![]
            } else {
                vec![(CIMD_ID.to_string(), SECRET.to_string())]
            },
            ..SiteOptions::auth_server()
        },
        |m| m,
    );
    let dir = web_dir(
        test,
        &mcp,
        json!({"client_id": CIMD_ID, "client_secret_env_var": SECRET_VAR,
               "registration": "dynamic"}),
    );
    login(&dir).assert_exit(0);
    assert!(auth.register_requests().is_empty(), "{}", auth.summary());
    let a = auth.authorize_requests();
    assert_eq!(a.len(), 1);
    assert_eq!(param(&query(&a[0].path), "client_id"), CIMD_ID);
    assert_eq!(entry(&dir)["client_id"], json!(CIMD_ID));
    assert_eq!(entry(&dir)["registration"], Value::Null);
    let t = auth.token_requests()[0].clone();
    assert_eq!(t.status, Some(200));
    cmd(&dir, &["list", "web"]).assert_exit(0);
    (auth, t)
}

#[test]
fn an_https_client_id_is_a_metadata_document_when_the_server_supports_them() {
    let (_auth, t) = https_client_id("auth_paths_cimd", true);
    // A metadata-document client is public: no secret goes anywhere.
    assert_eq!(t.header("authorization"), None);
    let f = form_decode(&t.body);
    assert_eq!(param(&f, "client_id"), CIMD_ID);
    assert!(f.iter().all(|(k, _)| k != "client_secret"), "{}", t.body);
}

#[test]
fn an_https_client_id_is_a_plain_client_id_otherwise() {
    let (_auth, t) = https_client_id("auth_paths_no_cimd", false);
    assert_eq!(
        t.header("authorization"),
        Some(
            basic(
                "https%3A%2F%2Fclient.example%2Frivumi-mcp.json",
                "sec%3Aret%2F%2B1"
            )
            .as_str()
        )
    );
}

// ---------------------------------------------------------------------------
// login --refresh
// ---------------------------------------------------------------------------

fn refresh(dir: &Dir) -> TestCommand {
    cmd(dir, &["login", "web", "--refresh"])
}

#[test]
fn refresh_without_a_stored_credential() {
    let (auth, mcp) = default_pair();
    let dir = web_dir("auth_paths_refresh_none", &mcp, bare());
    let out = refresh(&dir).assert_exit(6);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'web': no credential is stored; run \
         'rivumi-mcp login web'\n"
    );
    assert_eq!(out.stdout, "");
    assert!(auth.requests().is_empty());
    assert!(mcp.requests().is_empty());
}

#[test]
fn refresh_without_a_refresh_token() {
    let (auth, mcp) = default_pair();
    let dir = web_dir("auth_paths_refresh_no_rt", &mcp, bare());
    login(&dir).assert_exit(0);
    let before = std::fs::read(creds(&dir)).unwrap();
    let out = refresh(&dir).assert_exit(6);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'web': the stored credential has no refresh \
         token; run 'rivumi-mcp login web'\n"
    );
    assert_eq!(auth.token_requests().len(), 1);
    assert_eq!(std::fs::read(creds(&dir)).unwrap(), before);
}

/// A pair whose authorization server issues refresh tokens, changed by
/// `f`; a Dir logged in (at-1, rt-1).
fn logged_in_with_refresh(
    test: &str,
    f: impl FnOnce(SiteOptions) -> SiteOptions,
    oauth: Value,
) -> (Dir, OAuthSite, OAuthSite) {
    let (auth, mcp) = pair(
        f(SiteOptions {
            refresh_tokens: true,
            expires_in: Some(3600),
            ..SiteOptions::auth_server()
        }),
        |m| m,
    );
    let dir = web_dir(test, &mcp, oauth);
    login(&dir).assert_exit(0);
    let e = entry(&dir);
    assert_eq!(e["access_token"], json!("at-1"));
    assert_eq!(e["refresh_token"], json!("rt-1"));
    (dir, auth, mcp)
}

#[test]
fn refresh_exchanges_the_refresh_token_and_stores_the_rotation() {
    let (dir, auth, mcp) =
        logged_in_with_refresh("auth_paths_refresh", |a| a, bare());
    let out = refresh(&dir).assert_exit(0);
    let prefix = format!(
        "refreshed the token of 'web' ({}), token expires ",
        mcp.url()
    );
    assert!(out.stdout.starts_with(&prefix), "{}", out.stdout);
    assert!(
        out.stdout.ends_with(&format!(
            "; credential stored in {}\n",
            creds(&dir).display()
        )),
        "{}",
        out.stdout
    );
    assert_eq!(out.stderr, "");
    let t = auth.token_requests();
    assert_eq!(t.len(), 2, "{}", auth.summary());
    let r = &t[1];
    assert_eq!(
        form_names(r),
        ["grant_type", "refresh_token", "resource", "client_id"]
    );
    let f = form_decode(&r.body);
    assert_eq!(param(&f, "grant_type"), "refresh_token");
    assert_eq!(param(&f, "refresh_token"), "rt-1");
    assert_eq!(param(&f, "resource"), mcp.url());
    assert_eq!(param(&f, "client_id"), CLIENT);
    assert_eq!(r.header("authorization"), None);
    assert_eq!(r.status, Some(200));
    // No browser, no authorization request.
    assert_eq!(auth.authorize_requests().len(), 1);
    assert_browser_runs(&dir, 1);
    let e = entry(&dir);
    assert_eq!(e["access_token"], json!("at-2"));
    assert_eq!(e["refresh_token"], json!("rt-2"));
    assert_eq!(e["client_id"], json!(CLIENT));
    // The resource is the server's URL: not recorded apart.
    assert_eq!(e.get("resource"), None);

    list_with_token(&dir, &mcp, "at-2");
}

#[test]
fn refresh_authenticates_the_client_by_the_same_method() {
    // The authorization server takes only client_secret_post; the login
    // used it, and the refresh must too.
    let (dir, auth, _mcp) = logged_in_with_refresh(
        "auth_paths_refresh_secret",
        |a| SiteOptions {
            auth_methods: Some(vec!["client_secret_post".into()]),
            clients: vec![(CLIENT.into(), SECRET.into())],
            ..a
        },
        with(bare(), json!({"client_secret_env_var": SECRET_VAR})),
    );
    let login_req = &auth.token_requests()[0];
    assert_eq!(param(&form_decode(&login_req.body), "client_secret"), SECRET);
    let out = refresh(&dir).run();
    let t = auth.token_requests();
    let r = &t[1];
    assert_eq!(
        r.header("authorization"),
        None,
        "the refresh used HTTP Basic, which this server does not support"
    );
    let f = form_decode(&r.body);
    assert_eq!(param(&f, "client_id"), CLIENT);
    assert_eq!(param(&f, "client_secret"), SECRET);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(entry(&dir)["refresh_token"], json!("rt-2"));
}

#[test]
fn concurrent_refreshes_wait_for_the_lock_and_use_the_rotated_token() {
    let (dir, auth, _mcp) = logged_in_with_refresh(
        "auth_paths_refresh_race",
        |a| SiteOptions {
            strict_rotation: true,
            token_delay: Duration::from_millis(300),
            ..a
        },
        bare(),
    );
    let first = std::fs::read(creds(&dir)).unwrap();
    let c1 = refresh(&dir);
    let c2 = refresh(&dir);
    let (p1, p2) = (c1.spawn(), c2.spawn());
    let o1 = crate::util::wait_with_timeout(p1, &c1);
    let o2 = crate::util::wait_with_timeout(p2, &c2);
    assert_eq!(o1.code, Some(0), "{o1:?}");
    assert_eq!(o2.code, Some(0), "{o2:?}");
    let t: Vec<Request> = auth.token_requests().into_iter().skip(1).collect();
    assert_eq!(t.len(), 2, "{}", auth.summary());
    let used: Vec<String> = t
        .iter()
        .map(|r| param(&form_decode(&r.body), "refresh_token").to_string())
        .collect();
    assert_eq!(used, ["rt-1", "rt-2"]);
    assert!(t.iter().all(|r| r.status == Some(200)), "{}", auth.summary());
    // The second was sent only after the first was answered.
    assert!(t[1].at >= t[0].done.expect("answered"));
    assert_eq!(auth.refresh_tokens(), ["rt-1", "rt-2", "rt-3"]);
    let e = entry(&dir);
    assert_eq!(e["refresh_token"], json!("rt-3"));
    assert_eq!(e["access_token"], json!("at-3"));

    // The server really refuses a reused refresh token: what a refresh
    // without the lock would have met.
    std::fs::write(creds(&dir), &first).unwrap();
    let out = refresh(&dir).assert_exit(6);
    assert_contains(&out.stderr, "answered HTTP 400: invalid_grant");
    assert_eq!(entry(&dir)["refresh_token"], json!("rt-1"));
}

#[test]
fn an_expired_token_is_never_refreshed_silently() {
    let (dir, auth, mcp) =
        logged_in_with_refresh("auth_paths_no_silent_refresh", |a| a, bare());
    // Expire it in the file (mode and link count unchanged).
    expire_stored_token(&dir);
    let seen = mcp.requests().len();
    for args in [
        &["list", "web"][..],
        &["call", "-y", "mcp__web__echo", "text=hi"][..],
    ] {
        let out = cmd(&dir, args).assert_exit(6);
        let l = last_line(&out);
        assert!(
            l.starts_with(
                "rivumi-mcp: server 'web': the stored token expired at "
            ),
            "{l}"
        );
        assert!(
            l.ends_with(
                "; run 'rivumi-mcp login web' (tokens are never refreshed \
                 silently)"
            ),
            "{l}"
        );
    }
    assert_eq!(auth.token_requests().len(), 1, "{}", auth.summary());
    assert!(
        auth.token_requests()
            .iter()
            .all(|r| param(&form_decode(&r.body), "grant_type")
                != "refresh_token")
    );
    assert_eq!(mcp.requests().len(), seen, "{}", mcp.summary());
    assert_eq!(entry(&dir)["refresh_token"], json!("rt-1"));
}

// ---------------------------------------------------------------------------
// The client-credentials grant
// ---------------------------------------------------------------------------

/// A pair whose authorization server knows the confidential client and
/// supports `methods`; a Dir with the client-credentials block.
fn client_credentials(
    test: &str,
    methods: &[&str],
) -> (Dir, OAuthSite, OAuthSite) {
    let (auth, mcp) = pair(
        SiteOptions {
            auth_methods: Some(
                methods.iter().map(|m| m.to_string()).collect(),
            ),
            clients: vec![(CLIENT.into(), SECRET.into())],
            ..SiteOptions::auth_server()
        },
        |m| m,
    );
    let dir = web_dir(
        test,
        &mcp,
        json!({"client_id": CLIENT, "client_secret_env_var": SECRET_VAR,
               "grant": "client_credentials", "scopes": ["mcp:tools"],
               "trust_discovery": true}),
    );
    (dir, auth, mcp)
}

/// Logs in without a browser; returns the token request after checking
/// the common parts, then lists with the token.
fn client_credentials_login(
    dir: &Dir,
    auth: &OAuthSite,
    mcp: &OAuthSite,
) -> Request {
    let out = login(dir).assert_exit(0);
    assert_eq!(
        out.stdout,
        format!(
            "logged in to 'web' ({}); credential stored in {}\n",
            mcp.url(),
            creds(dir).display()
        )
    );
    assert_eq!(out.stderr, "");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(browser_url(dir), None, "no browser for client credentials");
    assert!(auth.authorize_requests().is_empty(), "{}", auth.summary());
    let t = auth.token_requests();
    assert_eq!(t.len(), 1, "{}", auth.summary());
    let t = t[0].clone();
    assert_eq!(t.status, Some(200));
    let f = form_decode(&t.body);
    assert_eq!(param(&f, "grant_type"), "client_credentials");
    assert_eq!(param(&f, "resource"), mcp.url());
    assert_eq!(param(&f, "scope"), "mcp:tools");
    assert!(f.iter().all(|(k, _)| k != "code" && k != "redirect_uri"));
    let e = entry(dir);
    assert_eq!(e["access_token"], json!("at-1"));
    assert_eq!(e["refresh_token"], Value::Null);
    list_with_token(dir, mcp, "at-1");
    t
}

#[test]
fn client_credentials_with_http_basic() {
    let (dir, auth, mcp) = client_credentials(
        "auth_paths_cc_basic",
        &["client_secret_basic", "client_secret_post"],
    );
    let t = client_credentials_login(&dir, &auth, &mcp);
    assert_eq!(
        t.header("authorization"),
        Some(basic(CLIENT, "sec%3Aret%2F%2B1").as_str())
    );
    assert_eq!(form_names(&t), ["grant_type", "scope", "resource"]);
}

#[test]
fn client_credentials_with_form_fields() {
    let (dir, auth, mcp) =
        client_credentials("auth_paths_cc_post", &["client_secret_post"]);
    let t = client_credentials_login(&dir, &auth, &mcp);
    assert_eq!(t.header("authorization"), None);
    assert_eq!(
        form_names(&t),
        ["grant_type", "scope", "resource", "client_id", "client_secret"]
    );
    let f = form_decode(&t.body);
    assert_eq!(param(&f, "client_id"), CLIENT);
    assert_eq!(param(&f, "client_secret"), SECRET);
}

/// Without `"trust_discovery": true`, a client-credentials block that
/// names no authorization server is refused before anything is sent: the
/// MCP server's metadata would choose where the client secret goes
/// (issue 22, item 7). The opt-in is warned about.
#[test]
fn client_credentials_needs_a_configured_authorization_server() {
    let (dir, auth, mcp) = client_credentials(
        "auth_paths_cc_discovered",
        &["client_secret_basic"],
    );
    let out = cmd(&dir, &["check-config"]).assert_exit(0);
    assert_contains(
        &out.stdout,
        "warning: server 'web': \"trust_discovery\": the MCP server's \
         metadata chooses the authorization server that receives the \
         client's credentials",
    );
    config(
        &dir,
        &mcp.url(),
        json!({"client_id": CLIENT, "client_secret_env_var": SECRET_VAR,
               "grant": "client_credentials"}),
    );
    let out = login(&dir).assert_exit(3);
    assert_contains(
        &out.stderr,
        "\"grant\": \"client_credentials\" would send the client's \
         credentials to whatever authorization server the MCP server names",
    );
    assert!(auth.requests().is_empty(), "{}", auth.summary());
    assert!(mcp.requests().is_empty(), "{}", mcp.summary());
    // Named by the operator, it works as before.
    config(
        &dir,
        &mcp.url(),
        json!({"client_id": CLIENT, "client_secret_env_var": SECRET_VAR,
               "grant": "client_credentials", "scopes": ["mcp:tools"],
               "authorization_server": auth.issuer()}),
    );
    client_credentials_login(&dir, &auth, &mcp);
}

#[test]
fn client_credentials_without_the_secret_refuses_before_any_request() {
    let (dir, auth, mcp) =
        client_credentials("auth_paths_cc_unset", &["client_secret_basic"]);
    let out = login(&dir).env_remove(SECRET_VAR).assert_exit(3);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'web': environment variable \
         'RIVUMI_TEST_SECRET' (client_secret_env_var) is not set or empty\n"
    );
    assert_eq!(out.stdout, "");
    assert!(auth.requests().is_empty(), "{}", auth.summary());
    assert!(mcp.requests().is_empty(), "{}", mcp.summary());
    assert_eq!(browser_url(&dir), None);
    assert!(!creds(&dir).exists());
}
