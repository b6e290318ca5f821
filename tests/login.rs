//! OAuth through the real binary: `login` against the in-process
//! authorization server of `util/oauth.rs` with a scripted browser, then
//! `list`/`call` against an MCP server that wants the token; `status`,
//! `logout` and `discover`; the authorization and token requests on the
//! wire; what is refused (a bad `state`, `iss`, issuer, redirects, odd
//! token answers, hostile endpoints); the credential file's rules; and
//! that no secret reaches the output or the journal.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::oauth::{
    AsOptions, AuthServer, CLIENT, FAVICON, Iss, LIST_OUT, LOGIN_ARGS, POST,
    ProtectedMcp, TAMPERED_STATE, TokenAnswer, WRONG_HOST, browser_log,
    browser_url, config, creds, form_decode, last_line, open_this, param,
    query, read_json, s256, wait_until, web_command as cmd, write_browser,
    write_idle_browser,
};
use crate::util::{
    Dir, TestCommand, assert_absent, assert_contains, write_mcp_json,
};

/// `login web` with a callback deadline that fails fast.
fn login(dir: &Dir) -> TestCommand {
    cmd(dir, LOGIN_ARGS)
}

/// The usual `oauth` block: discovery from the issuer, two scopes.
fn discovered(auth: &AuthServer) -> Value {
    json!({
        "client_id": CLIENT,
        "authorization_server": auth.issuer(),
        "scopes": ["mcp:tools", "offline_access"],
    })
}

/// An authorization server with `opts`, an MCP server that wants its
/// token, a Dir with the usual config and a browser running `before`.
fn setup(
    test: &str,
    opts: AsOptions,
    before: &str,
) -> (Dir, AuthServer, ProtectedMcp) {
    let token = opts.access_token.clone();
    let auth = AuthServer::start(opts);
    let mcp = ProtectedMcp::start(&token, &auth.issuer(), None);
    let dir = Dir::new(test);
    config(&dir, &mcp.url(), discovered(&auth));
    write_browser(&dir, before);
    (dir, auth, mcp)
}

/// What a login that stored no expiry prints.
fn logged_in(mcp: &ProtectedMcp, store: &Path) -> String {
    format!(
        "logged in to 'web' ({}); credential stored in {}\n",
        mcp.url(),
        store.display()
    )
}

/// The requests to the MCP server with an `Authorization` header.
fn with_auth(mcp: &ProtectedMcp) -> Vec<String> {
    mcp.requests()
        .iter()
        .filter_map(|r| r.header("authorization").map(str::to_string))
        .collect()
}

/// The names in `dir` that start with `prefix`.
fn names_starting(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// The whole flow
// ---------------------------------------------------------------------------

#[test]
fn login_list_call_status_logout() {
    let (dir, auth, mcp) = setup("login_whole_flow", AsOptions::default(), "");
    // Written non-canonically; stored and sent canonically.
    let written = mcp.url().replacen("http://", "HTTP://", 1);
    config(&dir, &written, discovered(&auth));
    // The default credential path: $XDG_CONFIG_HOME/rivumi-mcp/.
    let store = dir.path(".home/.config/rivumi-mcp/credentials.json");
    let run = |args: &[&str]| {
        let mut c = cmd(&dir, args);
        c.env_remove("RIVUMI_MCP_CREDENTIALS");
        c
    };

    // Before: the server wants a login.
    let out = run(&["list", "web"]).assert_exit(6);
    assert_contains(&out.stderr, "authentication required (HTTP 401)");

    let out = run(&["login", "web", "--timeout", "15"]).assert_exit(0);
    let url = browser_url(&dir).expect("the browser was started");
    assert_eq!(out.stderr, open_this(&url));
    assert_eq!(out.stdout, logged_in(&mcp, &store));
    assert_eq!(browser_log(&dir), ["callback 200"]);
    assert_eq!(auth.metadata_requests().len(), 1, "{}", auth.summary());
    assert_eq!(
        auth.metadata_requests()[0].path,
        "/.well-known/oauth-authorization-server"
    );
    assert_eq!(auth.token_requests().len(), 1, "{}", auth.summary());

    // The credential file: 0600 in a 0700 directory, bound to the URL.
    let meta = std::fs::symlink_metadata(&store).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(meta.mode() & 0o777, 0o600);
    let dmeta = std::fs::metadata(store.parent().unwrap()).unwrap();
    assert_eq!(dmeta.mode() & 0o777, 0o700);
    let v = read_json(&store);
    let e = &v["servers"]["web"];
    assert_eq!(v["version"], json!(1), "{v}");
    assert_eq!(e["url"], json!(mcp.url()), "{v}");
    assert_eq!(e["token_endpoint"], json!(auth.token_endpoint()), "{v}");
    // As the metadata published it, not canonicalized with a `/`.
    assert_eq!(e["issuer"], json!(auth.issuer()), "{v}");
    assert_eq!(e["client_id"], json!(CLIENT), "{v}");
    assert_eq!(e["access_token"], json!("tok-0001"), "{v}");
    assert_eq!(e["expires_at"], Value::Null, "{v}");
    assert_eq!(v["servers"].as_object().unwrap().len(), 1, "{v}");
    assert!(
        names_starting(store.parent().unwrap(), ".credentials").is_empty()
    );

    // The token goes to the server it was obtained for.
    let out = run(&["list", "web"]).assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
    assert_eq!(out.stderr, "");
    let out = run(&["call", "-y", "mcp__web__echo", "text=hi"]).assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    assert_eq!(out.stderr, "");
    let after_401 = mcp.requests().into_iter().skip(1).collect::<Vec<_>>();
    assert!(!after_401.is_empty());
    for r in &after_401 {
        assert_eq!(
            r.header("authorization"),
            Some("Bearer tok-0001"),
            "{}",
            r.summary()
        );
    }

    // status: the entry, never the token.
    let out = run(&["status"]).assert_exit(0);
    assert_eq!(
        out.stdout,
        format!(
            "SERVER  AUTH   METHOD              CREDENTIAL  EXPIRES  URL\n\
             web     oauth  authorization_code  stored      -        {}\n\
             credentials: {}\n",
            mcp.url(),
            store.display()
        )
    );
    assert_absent(&out.all(), "tok-0001");
    let out = run(&["status", "--json"]).assert_exit(0);
    let v = out.stdout_json();
    assert_eq!(
        v,
        json!({"credentials": store.display().to_string(), "servers": [{
            "server": "web", "auth": "oauth", "credential": "stored",
            "expires_at": null, "url": mcp.url(),
            "configured_url": mcp.url(), "issuer": auth.issuer(),
            "refresh_token": false, "grant": "authorization_code",
            "client_auth": null, "dpop": false}]})
    );
    assert_absent(&out.all(), "tok-0001");

    // logout removes it; the file stays, 0600, without the entry.
    let out = run(&["logout", "web"]).assert_exit(0);
    assert_eq!(
        out.stdout,
        format!("removed the credential of 'web' from {}\n", store.display())
    );
    assert_eq!(out.stderr, "");
    assert_eq!(read_json(&store)["servers"], json!({}));
    assert_eq!(std::fs::metadata(&store).unwrap().mode() & 0o777, 0o600);
    let out = run(&["status"]).assert_exit(0);
    assert_contains(
        &out.stdout,
        "\nweb     oauth  authorization_code  none        -        ",
    );
    let out = run(&["logout", "web"]).assert_exit(0);
    assert_eq!(out.stdout, "no credential stored for 'web'\n");
    let before = mcp.requests().len();
    run(&["list", "web"]).assert_exit(6);
    assert!(
        mcp.requests()[before..]
            .iter()
            .all(|r| r.header("authorization").is_none())
    );
}

// ---------------------------------------------------------------------------
// The requests on the wire
// ---------------------------------------------------------------------------

/// Whether `s` is base64url without padding.
fn is_b64url(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
}

#[test]
fn authorization_and_token_requests() {
    let (dir, auth, mcp) = setup("login_wire", AsOptions::default(), "");
    login(&dir).assert_exit(0);
    let url = browser_url(&dir).expect("the browser was started");
    let a = auth.authorize_requests();
    assert_eq!(a.len(), 1, "{}", auth.summary());
    // The browser got exactly the URL the authorization server saw.
    assert_eq!(url, format!("{}{}", auth.issuer(), a[0].path));
    assert!(url.starts_with(&format!("{}?", auth.authorization_endpoint())));
    let q = query(&url);
    let names: Vec<&str> = q.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "response_type",
            "client_id",
            "redirect_uri",
            "code_challenge",
            "code_challenge_method",
            "state",
            "scope",
            "resource"
        ]
    );
    assert_eq!(param(&q, "response_type"), "code");
    assert_eq!(param(&q, "client_id"), CLIENT);
    let redirect_uri = param(&q, "redirect_uri");
    let port: u16 = redirect_uri
        .strip_prefix("http://127.0.0.1:")
        .and_then(|r| r.strip_suffix("/callback"))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("redirect_uri {redirect_uri}"));
    assert_ne!(port, 0);
    // Encoded in the URL, not raw.
    assert_contains(
        &url,
        &format!("&redirect_uri=http%3A%2F%2F127.0.0.1%3A{port}%2Fcallback&"),
    );
    let challenge = param(&q, "code_challenge");
    assert_eq!(challenge.len(), 43, "{challenge}");
    assert!(is_b64url(challenge), "{challenge}");
    assert_eq!(param(&q, "code_challenge_method"), "S256");
    let state = param(&q, "state");
    assert!(is_b64url(state), "{state}");
    // At least 128 bits.
    assert!(state.len() * 6 >= 128, "{state}");
    assert_eq!(param(&q, "scope"), "mcp:tools offline_access");
    assert_eq!(param(&q, "resource"), mcp.url());

    // The callback rivumi-mcp was sent to carries that state.
    let loc = std::fs::read_to_string(dir.path("browser-location.txt"))
        .unwrap_or_default();
    assert_eq!(
        loc.trim_end(),
        format!("{redirect_uri}?code=code-0001&state={state}")
    );

    let t = auth.token_requests();
    assert_eq!(t.len(), 1, "{}", auth.summary());
    let t = &t[0];
    assert_eq!((t.method.as_str(), t.path.as_str()), ("POST", "/token"));
    assert_eq!(
        t.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(t.header("authorization"), None);
    let f = form_decode(&t.body);
    let names: Vec<&str> = f.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "grant_type",
            "code",
            "redirect_uri",
            "code_verifier",
            "resource",
            "client_id"
        ],
        "{}",
        t.body
    );
    assert_eq!(param(&f, "grant_type"), "authorization_code");
    assert_eq!(param(&f, "code"), "code-0001");
    assert_eq!(param(&f, "redirect_uri"), redirect_uri);
    assert_eq!(param(&f, "resource"), mcp.url());
    assert_eq!(param(&f, "client_id"), CLIENT);
    let verifier = param(&f, "code_verifier");
    assert!((43..=128).contains(&verifier.len()), "{verifier}");
    assert!(
        verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b)),
        "{verifier}"
    );
    assert_eq!(s256(verifier), challenge, "PKCE S256 relation");

    // A second login draws fresh values.
    login(&dir).assert_exit(0);
    let a = auth.authorize_requests();
    let q2 = query(&a[1].path);
    assert_ne!(param(&q2, "state"), state);
    assert_ne!(param(&q2, "code_challenge"), challenge);
    let f2 = form_decode(&auth.token_requests()[1].body);
    assert_ne!(param(&f2, "code_verifier"), verifier);
    assert_eq!(
        s256(param(&f2, "code_verifier")),
        param(&q2, "code_challenge")
    );
}

#[test]
fn configured_endpoints_and_redirect_path() {
    let auth = AuthServer::start(AsOptions::default());
    let mcp = ProtectedMcp::start("tok-0001", &auth.issuer(), None);
    let dir = Dir::new("login_endpoints");
    config(
        &dir,
        &mcp.url(),
        json!({
            "client_id": CLIENT,
            "authorization_endpoint": auth.authorization_endpoint(),
            "token_endpoint": auth.token_endpoint(),
            "redirect_path": "/oauth/done",
        }),
    );
    write_browser(&dir, "");
    let out = login(&dir).assert_exit(0);
    assert_eq!(out.stdout, logged_in(&mcp, &creds(&dir)));
    // No discovery.
    assert!(auth.metadata_requests().is_empty(), "{}", auth.summary());
    let q = query(&browser_url(&dir).unwrap());
    let ru = param(&q, "redirect_uri");
    assert!(ru.starts_with("http://127.0.0.1:"), "{ru}");
    assert!(ru.ends_with("/oauth/done"), "{ru}");
    // No scopes configured: no scope parameter.
    assert!(q.iter().all(|(k, _)| k != "scope"), "{q:?}");
    assert_eq!(
        param(&form_decode(&auth.token_requests()[0].body), "redirect_uri"),
        ru
    );
    assert_eq!(browser_log(&dir), ["callback 200"]);
    let e = &read_json(&creds(&dir))["servers"]["web"];
    assert_eq!(e["token_endpoint"], json!(auth.token_endpoint()));
    assert_eq!(e["issuer"], Value::Null);
    let out = cmd(&dir, &["list", "web"]).assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
}

#[test]
fn fixed_redirect_port() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let auth = AuthServer::start(AsOptions::default());
    let mcp = ProtectedMcp::start("tok-0001", &auth.issuer(), None);
    let dir = Dir::new("login_fixed_port");
    let mut oauth = discovered(&auth);
    oauth["redirect_port"] = json!(port);
    config(&dir, &mcp.url(), oauth);
    write_browser(&dir, "");
    login(&dir).assert_exit(0);
    let q = query(&browser_url(&dir).unwrap());
    assert_eq!(
        param(&q, "redirect_uri"),
        format!("http://127.0.0.1:{port}/callback")
    );
    assert_eq!(browser_log(&dir), ["callback 200"]);
    // The port is free again afterwards.
    std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
}

// ---------------------------------------------------------------------------
// Client secrets
// ---------------------------------------------------------------------------

/// A secret that needs form-encoding inside HTTP Basic (RFC 6749 §2.3.1).
const SECRET: &str = "sec:ret/+1";

fn with_secret(
    test: &str,
    methods: &[&str],
) -> (Dir, AuthServer, ProtectedMcp) {
    let opts = AsOptions {
        auth_methods: Some(methods.iter().map(|m| m.to_string()).collect()),
        client_secret: Some(SECRET.into()),
        ..AsOptions::default()
    };
    let (dir, auth, mcp) = setup(test, opts, "");
    let mut oauth = discovered(&auth);
    oauth["client_secret_env_var"] = json!("RIVUMI_TEST_SECRET");
    config(&dir, &mcp.url(), oauth);
    (dir, auth, mcp)
}

#[test]
fn client_secret_basic() {
    let (dir, auth, _mcp) = with_secret(
        "login_secret_basic",
        &["client_secret_basic", "client_secret_post"],
    );
    let out = login(&dir).env("RIVUMI_TEST_SECRET", SECRET).assert_exit(0);
    assert_absent(&out.all(), SECRET);
    let t = &auth.token_requests()[0];
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD
        .encode(format!("{CLIENT}:sec%3Aret%2F%2B1"));
    assert_eq!(
        t.header("authorization"),
        Some(format!("Basic {b64}").as_str())
    );
    // One authentication method: the secret is not in the form too.
    let f = form_decode(&t.body);
    assert!(f.iter().all(|(k, _)| k != "client_secret"), "{}", t.body);
}

#[test]
fn client_secret_post() {
    let (dir, auth, _mcp) =
        with_secret("login_secret_post", &["client_secret_post"]);
    let out = login(&dir).env("RIVUMI_TEST_SECRET", SECRET).assert_exit(0);
    assert_absent(&out.all(), SECRET);
    let t = &auth.token_requests()[0];
    assert_eq!(t.header("authorization"), None);
    let f = form_decode(&t.body);
    assert_eq!(param(&f, "client_secret"), SECRET);
    assert_eq!(param(&f, "client_id"), CLIENT);
}

#[test]
fn client_secret_unset_refuses_before_anything() {
    let (dir, auth, _mcp) =
        with_secret("login_secret_unset", &["client_secret_basic"]);
    for value in [None, Some("")] {
        let mut c = login(&dir);
        if let Some(v) = value {
            c.env("RIVUMI_TEST_SECRET", v);
        }
        let out = c.assert_exit(3);
        assert_eq!(
            out.stderr,
            "rivumi-mcp: server 'web': environment variable \
             'RIVUMI_TEST_SECRET' (client_secret_env_var) is not set or \
             empty\n"
        );
        assert_eq!(out.stdout, "");
    }
    // Before anything: not even the metadata is fetched.
    assert!(
        auth.requests().is_empty(),
        "the unset client_secret_env_var must refuse before any request; \
         the authorization server saw:\n{}",
        auth.summary()
    );
    assert_eq!(browser_url(&dir), None);
    assert!(!creds(&dir).exists());
}

// ---------------------------------------------------------------------------
// The callback
// ---------------------------------------------------------------------------

#[test]
fn tampered_state_is_ignored_and_the_flow_completes() {
    let (dir, auth, mcp) =
        setup("login_bad_state", AsOptions::default(), TAMPERED_STATE);
    let out = login(&dir).assert_exit(0);
    assert_eq!(out.stdout, logged_in(&mcp, &creds(&dir)));
    assert_eq!(browser_log(&dir), ["tampered 400", "callback 200"]);
    assert_eq!(auth.token_requests().len(), 1);
}

#[test]
fn stray_requests_on_the_callback_port() {
    let before = format!("{FAVICON}{POST}{WRONG_HOST}");
    let (dir, auth, mcp) = setup("login_stray", AsOptions::default(), &before);
    let out = login(&dir).assert_exit(0);
    assert_eq!(out.stdout, logged_in(&mcp, &creds(&dir)));
    assert_eq!(
        browser_log(&dir),
        ["favicon 404", "post 405", "host 400", "callback 200"]
    );
    assert_eq!(auth.token_requests().len(), 1);
}

#[test]
fn error_callback_ends_the_login() {
    let opts = AsOptions {
        deny: Some("The user said no\x1b[31m\nInjected: yes".into()),
        ..AsOptions::default()
    };
    let (dir, auth, _mcp) = setup("login_denied", opts, "");
    let out = login(&dir).assert_exit(6);
    let url = browser_url(&dir).unwrap();
    assert_eq!(
        out.stderr,
        format!(
            "{}rivumi-mcp: server 'web': the authorization server refused: \
             access_denied: The user said no\\x1b[31m\\nInjected: yes\n",
            open_this(&url)
        )
    );
    assert_eq!(out.stdout, "");
    assert_eq!(browser_log(&dir), ["callback 200"]);
    assert!(auth.token_requests().is_empty(), "{}", auth.summary());
    assert!(!creds(&dir).exists());
}

#[test]
fn timeout_without_a_callback() {
    let (dir, auth, _mcp) = setup("login_timeout", AsOptions::default(), "");
    write_idle_browser(&dir);
    let out = cmd(&dir, &["login", "web", "--timeout", "1"]).assert_exit(5);
    let url = browser_url(&dir).expect("the browser was started");
    assert_eq!(
        out.stderr,
        format!(
            "{}rivumi-mcp: server 'web': timed out after 1s waiting for \
             the login callback\n",
            open_this(&url)
        )
    );
    assert!(auth.authorize_requests().is_empty());
    assert!(auth.token_requests().is_empty());
    assert!(!creds(&dir).exists());
}

#[test]
fn iss_parameter_is_checked() {
    // (advertised, what the response carries, exit code): a present `iss`
    // must be the issuer as published, byte for byte, advertised or not
    // (RFC 9207); a missing one is refused only when it was promised.
    for (advertised, iss, code) in [
        (true, Iss::Right, 0),
        (true, Iss::Wrong, 6),
        (true, Iss::Slash, 6),
        (true, Iss::Omit, 6),
        (false, Iss::Omit, 0),
        (false, Iss::Right, 0),
        (false, Iss::Wrong, 6),
        (false, Iss::Slash, 6),
    ] {
        let opts = AsOptions {
            iss_supported: advertised,
            iss,
            ..AsOptions::default()
        };
        let (dir, auth, _mcp) = setup("login_iss", opts, "");
        let out = login(&dir).assert_exit(code);
        let issuer = auth.issuer();
        let came_from = |got: &str| {
            format!(
                "rivumi-mcp: server 'web': the authorization response came \
                 from issuer '{got}', not '{issuer}' (RFC 9207); refusing it"
            )
        };
        match iss {
            Iss::Wrong => {
                assert_eq!(last_line(&out), came_from("https://evil.example"))
            }
            Iss::Slash => {
                assert_eq!(last_line(&out), came_from(&format!("{issuer}/")))
            }
            Iss::Omit if advertised => assert_eq!(
                last_line(&out),
                "rivumi-mcp: server 'web': the authorization server \
                 promises an 'iss' parameter (RFC 9207) but the response \
                 has none; refusing it"
            ),
            _ => {}
        }
        let n = usize::from(code == 0);
        assert_eq!(auth.token_requests().len(), n, "{advertised} {iss:?}");
        assert_eq!(creds(&dir).exists(), code == 0, "{advertised} {iss:?}");
        if code == 0 {
            // Recorded as published.
            let e = &read_json(&creds(&dir))["servers"]["web"];
            assert_eq!(e["issuer"], json!(issuer));
        }
    }
}

// ---------------------------------------------------------------------------
// Refused metadata and token answers
// ---------------------------------------------------------------------------

#[test]
fn metadata_without_s256_is_refused_before_authorizing() {
    let opts = AsOptions { s256: false, ..AsOptions::default() };
    let (dir, auth, _mcp) = setup("login_no_s256", opts, "");
    let out = login(&dir).assert_exit(4);
    assert_eq!(
        out.stderr,
        format!(
            "rivumi-mcp: server 'web': authorization server metadata at \
             {}/.well-known/oauth-authorization-server: the authorization \
             server does not list S256 in code_challenge_methods_supported, \
             so PKCE cannot be used; refusing to log in (MCP 2025-11-25)\n",
            auth.issuer()
        )
    );
    assert_eq!(browser_url(&dir), None);
    assert!(auth.authorize_requests().is_empty());
    assert!(!creds(&dir).exists());
}

#[test]
fn metadata_of_another_issuer_is_refused() {
    let opts = AsOptions {
        issuer: Some("http://127.0.0.1:9/elsewhere".into()),
        ..AsOptions::default()
    };
    let (dir, auth, _mcp) = setup("login_issuer_mismatch", opts, "");
    let out = login(&dir).assert_exit(4);
    assert_eq!(
        out.stderr,
        format!(
            "rivumi-mcp: server 'web': authorization server metadata at \
             {0}/.well-known/oauth-authorization-server: its issuer \
             'http://127.0.0.1:9/elsewhere' is not the issuer '{0}/' asked \
             for; refusing it (RFC 8414 §3.3)\n",
            auth.issuer()
        )
    );
    assert_eq!(browser_url(&dir), None);
    assert!(auth.authorize_requests().is_empty());
}

/// A login whose token answer is `answer`: exit 4, `message` as the last
/// line, nothing stored, one request to the token endpoint.
fn bad_token_answer(test: &str, answer: TokenAnswer, message: &str) {
    let opts = AsOptions { token_answer: answer, ..AsOptions::default() };
    let (dir, auth, _mcp) = setup(test, opts, "");
    let out = login(&dir).assert_exit(4);
    let msg = message.replace("{token}", &auth.token_endpoint());
    let msg = msg.replace("{port}", &auth.port().to_string());
    assert_eq!(last_line(&out), msg);
    assert_eq!(out.stdout, "");
    assert_eq!(auth.token_requests().len(), 1, "{}", auth.summary());
    assert!(!creds(&dir).exists());
    assert_absent(&out.all(), "tok-0001");
}

#[test]
fn token_endpoint_redirect_is_refused() {
    bad_token_answer(
        "login_token_redirect",
        TokenAnswer::Redirect,
        "rivumi-mcp: server 'web': token endpoint {token}: HTTP 302 \
         redirect to 'http://127.0.0.1:{port}/token2' refused: rivumi-mcp \
         never follows redirects",
    );
}

#[test]
fn html_token_answer_is_an_error() {
    bad_token_answer(
        "login_token_html",
        TokenAnswer::Html,
        "rivumi-mcp: server 'web': token endpoint {token}: expected \
         application/json, got 'text/html' (HTTP 200): <html><body>Sign \
         in</body></html>",
    );
}

#[test]
fn mac_token_type_is_an_error() {
    bad_token_answer(
        "login_token_mac",
        TokenAnswer::Mac,
        "rivumi-mcp: server 'web': token endpoint {token}: token_type is \
         'mac', not Bearer; nothing stored",
    );
}

// ---------------------------------------------------------------------------
// Hostile authorization endpoints
// ---------------------------------------------------------------------------

#[test]
fn non_http_authorization_endpoints_are_refused() {
    let auth = AuthServer::start(AsOptions::default());
    for (endpoint, scheme) in
        [("javascript:alert(1)", "javascript"), ("file:///etc/passwd", "file")]
    {
        let dir = Dir::new("login_hostile_scheme");
        config(
            &dir,
            "http://127.0.0.1:9/mcp",
            json!({
                "client_id": CLIENT,
                "authorization_endpoint": endpoint,
                "token_endpoint": auth.token_endpoint(),
            }),
        );
        write_browser(&dir, "");
        let out = cmd(&dir, &["check-config"]).assert_exit(1);
        assert_contains(
            &out.all(),
            &format!(
                "url: unsupported scheme '{scheme}' (only http and https \
                 are allowed)"
            ),
        );
        assert_contains(
            &out.all(),
            "/mcpServers/web/oauth/authorization_endpoint",
        );
        let out = login(&dir).assert_exit(3);
        assert_contains(&out.stderr, "rivumi-mcp: server 'web': ");
        assert_contains(
            &out.stderr,
            &format!("unsupported scheme '{scheme}'"),
        );
        assert_eq!(browser_url(&dir), None);
    }
    assert!(auth.requests().is_empty(), "{}", auth.summary());
}

/// Every file name under `root`, recursively.
fn all_names(root: &Path) -> Vec<String> {
    let mut out = vec![];
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn shell_metacharacters_never_reach_a_shell() {
    let auth = AuthServer::start(AsOptions::default());
    let mcp = ProtectedMcp::start("tok-0001", &auth.issuer(), None);
    let dir = Dir::new("login_shell_chars");
    // (A raw backquote, brace or '|' is refused by the URL rules, as HTTP
    // does not allow it in a path; encoded, it still reaches the browser.)
    let path = "/auth$(touch%20pwned)%60touch%20pwned2%60;touch$IFS'pwned3'&y";
    let endpoint = format!("{}{path}", auth.issuer());
    config(
        &dir,
        &mcp.url(),
        json!({
            "client_id": CLIENT,
            "authorization_endpoint": endpoint,
            "token_endpoint": auth.token_endpoint(),
        }),
    );
    write_browser(&dir, "");
    // The URL rules accept these characters in a path.
    cmd(&dir, &["check-config"]).assert_exit(0);
    let out = login(&dir).assert_exit(0);
    let url = browser_url(&dir).unwrap();
    // argv[1], verbatim.
    assert!(
        url.starts_with(&format!("{endpoint}?response_type=code&")),
        "{url}"
    );
    assert_eq!(out.stderr, open_this(&url));
    assert_eq!(browser_log(&dir), ["callback 200"]);
    let names = all_names(dir.root());
    assert!(
        names.iter().all(|n| !n.contains("pwned")),
        "a shell ran: {names:?}"
    );
}

// ---------------------------------------------------------------------------
// The credential file
// ---------------------------------------------------------------------------

#[test]
fn symlinked_credential_file_is_refused() {
    let (dir, auth, _mcp) =
        setup("login_store_symlink", AsOptions::default(), "");
    let victim = dir.write("victim.json", "{\"do not\": \"touch\"}\n");
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600))
        .unwrap();
    dir.create_dir("store");
    std::os::unix::fs::symlink(&victim, creds(&dir)).unwrap();
    let msg = format!(
        "rivumi-mcp: credential file {} is a symbolic link; refusing it\n",
        creds(&dir).display()
    );
    let out = login(&dir).assert_exit(3);
    assert_eq!(out.stderr, msg);
    assert_eq!(browser_url(&dir), None);
    assert!(auth.requests().is_empty());
    for args in [&["list", "web"][..], &["logout", "web"], &["status"]] {
        let out = cmd(&dir, args).assert_exit(3);
        assert_contains(&out.stderr, "is a symbolic link");
    }
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "{\"do not\": \"touch\"}\n"
    );
    assert!(
        std::fs::symlink_metadata(creds(&dir))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// A credential file with no entries and this mode.
fn empty_store(dir: &Dir, mode: u32) -> PathBuf {
    let p = dir.write(
        "store/credentials.json",
        "{\"version\": 1, \"servers\": {}}\n",
    );
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))
        .unwrap();
    p
}

#[test]
fn loose_mode_is_refused_with_a_hint() {
    let (dir, auth, _mcp) =
        setup("login_store_mode", AsOptions::default(), "");
    let p = empty_store(&dir, 0o644);
    let out = login(&dir).assert_exit(3);
    assert_eq!(
        out.stderr,
        format!(
            "rivumi-mcp: credential file {0} has mode 644; it must be 0600 \
             (run: chmod 600 {0})\n",
            p.display()
        )
    );
    assert!(auth.requests().is_empty());
    // Never fixed silently.
    assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o644);
}

#[test]
fn credential_file_of_another_user_is_refused() {
    // SAFETY-free check of who we are: /proc/self/status's Uid line.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let root = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .is_some_and(|l| l.split_whitespace().nth(2) == Some("0"));
    if !root {
        eprintln!("skipped: chown needs root");
        return;
    }
    let (dir, auth, _mcp) =
        setup("login_store_owner", AsOptions::default(), "");
    let p = empty_store(&dir, 0o600);
    std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
    let out = login(&dir).assert_exit(3);
    assert_eq!(
        out.stderr,
        format!(
            "rivumi-mcp: credential file {} belongs to uid 65534, not to \
             you\n",
            p.display()
        )
    );
    assert!(auth.requests().is_empty());
    assert_eq!(std::fs::metadata(&p).unwrap().uid(), 65534);
}

#[test]
fn no_temp_files_left_and_a_symlinked_lock_is_refused() {
    let (dir, auth, _mcp) =
        setup("login_store_lock", AsOptions::default(), "");
    login(&dir).assert_exit(0);
    login(&dir).assert_exit(0);
    cmd(&dir, &["logout", "web"]).assert_exit(0);
    login(&dir).assert_exit(0);
    let store_dir = dir.path("store");
    let mut names = names_starting(&store_dir, "");
    names.sort();
    // No `.credentials.json.tmp-*` left behind.
    assert_eq!(names, ["credentials.json", "credentials.json.lock"]);
    let lock = store_dir.join("credentials.json.lock");
    assert_eq!(std::fs::metadata(&lock).unwrap().mode() & 0o777, 0o600);
    let before = std::fs::read_to_string(creds(&dir)).unwrap();

    // A symlink planted at the lock path is not followed: the login ends
    // without storing anything, and the link's target is untouched.
    let victim = dir.write("victim", "untouched\n");
    std::fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let out = login(&dir).assert_exit(3);
    assert!(
        last_line(&out)
            == format!(
                "rivumi-mcp: server 'web': credential file {}: cannot open \
                 the lock file: Too many levels of symbolic links (os error \
                 40)",
                creds(&dir).display()
            ),
        "{}",
        out.stderr
    );
    assert_eq!(auth.token_requests().len(), 4);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched\n");
    assert_eq!(std::fs::read_to_string(creds(&dir)).unwrap(), before);
    // A dangling one is not created through either.
    std::fs::remove_file(&victim).unwrap();
    login(&dir).assert_exit(3);
    assert!(!victim.exists());
    let mut names = names_starting(&store_dir, "");
    names.sort();
    assert_eq!(names, ["credentials.json", "credentials.json.lock"]);
}

/// Holds an exclusive `flock` on `path` while alive.
struct Flock {
    _file: std::fs::File,
}

impl Flock {
    #[allow(unsafe_code)]
    fn take(path: &Path) -> Flock {
        use std::os::fd::AsRawFd;
        let f = std::fs::File::open(path).unwrap();
        // SAFETY: flock on a descriptor we own.
        let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        assert_eq!(r, 0, "flock");
        Flock { _file: f }
    }
}

#[test]
fn a_killed_login_leaves_the_old_file_intact() {
    let (dir, auth, _mcp) = setup("login_killed", AsOptions::default(), "");
    login(&dir).assert_exit(0);
    let store = creds(&dir);
    let before = std::fs::read(&store).unwrap();
    let check = || {
        assert_eq!(std::fs::read(&store).unwrap(), before);
        assert_eq!(std::fs::metadata(&store).unwrap().mode() & 0o777, 0o600);
        let mut names = names_starting(&dir.path("store"), "");
        names.sort();
        assert_eq!(names, ["credentials.json", "credentials.json.lock"]);
    };

    // Killed while it waits for the browser.
    write_idle_browser(&dir);
    std::fs::remove_file(dir.path("browser-url.txt")).unwrap();
    let c = login(&dir);
    let mut child = c.spawn();
    assert!(
        wait_until(Duration::from_secs(10), || browser_url(&dir).is_some())
    );
    child.kill().unwrap();
    let out = crate::util::wait_with_timeout(child, &c);
    assert_eq!(out.code, None, "killed by a signal");
    check();

    // Killed in the writer: the flow is done, the token fetched, and the
    // login waits for the lock this test holds.
    write_browser(&dir, "");
    let lock = Flock::take(&dir.path("store/credentials.json.lock"));
    let mut child = c.spawn();
    let tokens = || auth.token_requests();
    assert!(wait_until(Duration::from_secs(10), || {
        tokens().len() == 2 && tokens()[1].done.is_some()
    }));
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "still waiting for the lock");
    child.kill().unwrap();
    let out = crate::util::wait_with_timeout(child, &c);
    assert_eq!(out.code, None, "killed by a signal");
    drop(lock);
    check();
    // The next login stores its entry as usual.
    login(&dir).assert_exit(0);
}

#[test]
fn a_token_is_not_sent_to_another_url() {
    let (dir, auth, mcp) = setup("login_other_url", AsOptions::default(), "");
    login(&dir).assert_exit(0);
    let moved = format!("{}2", mcp.url());
    config(&dir, &moved, discovered(&auth));
    let out = cmd(&dir, &["list", "web"]).assert_exit(6);
    assert_eq!(
        out.stderr.lines().next().unwrap_or(""),
        format!(
            "rivumi-mcp: warning: server 'web': the stored credential was \
             obtained for {}, not {moved}; it is not sent (run 'rivumi-mcp \
             login web')",
            mcp.url()
        )
    );
    assert_contains(&out.stderr, "authentication required (HTTP 401)");
    assert!(!mcp.requests().is_empty());
    assert!(with_auth(&mcp).is_empty(), "{:?}", with_auth(&mcp));
    let out = cmd(&dir, &["status"]).assert_exit(0);
    assert_contains(
        &out.stdout,
        &format!(
            "web     oauth  authorization_code  other URL   -        {}\n",
            mcp.url()
        ),
    );
}

#[test]
fn a_token_from_another_token_endpoint_is_not_sent() {
    let auth = AuthServer::start(AsOptions::default());
    let mcp = ProtectedMcp::start("tok-0001", &auth.issuer(), None);
    let dir = Dir::new("login_other_token_endpoint");
    let block = |token: String| {
        json!({
            "client_id": CLIENT,
            "authorization_endpoint": auth.authorization_endpoint(),
            "token_endpoint": token,
        })
    };
    config(&dir, &mcp.url(), block(auth.token_endpoint()));
    write_browser(&dir, "");
    login(&dir).assert_exit(0);
    cmd(&dir, &["list", "web"]).assert_exit(0);
    let sent = with_auth(&mcp).len();
    assert!(sent > 0);
    config(&dir, &mcp.url(), block(format!("{}/token-v2", auth.issuer())));
    let out = cmd(&dir, &["list", "web"]).assert_exit(6);
    assert_eq!(
        out.stderr.lines().next().unwrap_or(""),
        "rivumi-mcp: warning: server 'web': the stored credential came \
         from another token endpoint; it is not sent (run 'rivumi-mcp \
         login web')"
    );
    assert_eq!(with_auth(&mcp).len(), sent);
}

#[test]
fn an_expired_token_is_an_error_not_a_request() {
    let opts = AsOptions {
        expires_in: Some(1),
        refresh_token: Some("ref-0001".into()),
        scope: Some("mcp:tools".into()),
        ..AsOptions::default()
    };
    let (dir, auth, mcp) = setup("login_expired", opts, "");
    let out = cmd(&dir, &["login", "web", "--timeout", "15", "--json"])
        .assert_exit(0);
    let v = out.stdout_json();
    let at = v["expires_at"].as_u64().expect("expires_at");
    assert_eq!(
        v,
        json!({"server": "web", "logged_in": true, "url": mcp.url(),
               "expires_at": at, "scope": "mcp:tools", "refresh_token": true,
               "credentials": creds(&dir).display().to_string()})
    );
    let e = &read_json(&creds(&dir))["servers"]["web"];
    assert_eq!(e["expires_at"], json!(at));
    assert_eq!(e["refresh_token"], json!("ref-0001"));
    std::thread::sleep(Duration::from_millis(2100));
    let out = cmd(&dir, &["list", "web"]).assert_exit(6);
    let line = last_line(&out);
    assert!(
        line.starts_with(
            "rivumi-mcp: server 'web': the stored token expired at "
        ),
        "{line}"
    );
    assert!(
        line.ends_with(
            "; run 'rivumi-mcp login web' (tokens are never refreshed \
             silently)"
        ),
        "{line}"
    );
    assert!(mcp.requests().is_empty(), "{}", mcp.summary());
    // Nothing was refreshed behind the operator's back.
    assert_eq!(auth.token_requests().len(), 1);
    let out = cmd(&dir, &["status"]).assert_exit(0);
    assert_contains(
        &out.stdout,
        "web     oauth  authorization_code  expired ",
    );
}

// ---------------------------------------------------------------------------
// discover
// ---------------------------------------------------------------------------

/// A Dir whose `web` has no oauth block yet, behind a protected server.
fn discover_setup(
    test: &str,
    resource: Option<&str>,
) -> (Dir, AuthServer, ProtectedMcp) {
    let auth = AuthServer::start(AsOptions::default());
    let mcp = ProtectedMcp::start("tok-0001", &auth.issuer(), resource);
    let dir = Dir::new(test);
    write_mcp_json(&dir, &[("web", json!({"url": mcp.url()}))]);
    (dir, auth, mcp)
}

#[test]
fn discover_prints_the_authorization_server() {
    let (dir, auth, mcp) = discover_setup("login_discover", None);
    let before = all_names(dir.root());
    let out = cmd(&dir, &["discover", "web"]).assert_exit(0);
    let iss = auth.issuer();
    let (url, prm) = (mcp.url(), mcp.prm_url());
    let want = [
        format!("server 'web' ({url})"),
        "  unauthenticated request: HTTP 401".into(),
        format!("  challenge: bearer (resource_metadata=\"{prm}\")"),
        format!("  protected resource metadata ({prm}):"),
        format!("    resource: {url}"),
        format!("    authorization_servers: {iss}"),
        "    scopes_supported: mcp:tools".into(),
        format!(
            "  authorization server {iss} \
             ({iss}/.well-known/oauth-authorization-server):"
        ),
        format!("    authorization_endpoint: {iss}/authorize"),
        format!("    token_endpoint: {iss}/token"),
        "    code_challenge_methods_supported: S256".into(),
        "    scopes_supported: mcp:tools offline_access".into(),
        "  suggested \"oauth\" block (fill in client_id; redirect_port only \
         if your registration needs a fixed one):"
            .into(),
        "    {".into(),
        format!("      \"authorization_server\": \"{iss}\","),
        "      \"client_id\": \"<the client id registered for rivumi-mcp>\","
            .into(),
        "      \"redirect_port\": 8976,".into(),
        "      \"scopes\": [".into(),
        "        \"mcp:tools\"".into(),
        "      ]".into(),
        "    }".into(),
    ];
    assert_eq!(out.stdout, format!("{}\n", want.join("\n")));
    assert_eq!(out.stderr, "");
    // Read-only: no credential file, no other file.
    assert_eq!(all_names(dir.root()), before);
    assert!(!creds(&dir).exists());
    assert!(!dir.path(".home/.config/rivumi-mcp").exists());
    assert_eq!(mcp.requests()[0].header("authorization"), None);
}

#[test]
fn discover_json() {
    let (dir, auth, mcp) = discover_setup("login_discover_json", None);
    let out = cmd(&dir, &["discover", "web", "--json"]).assert_exit(0);
    let v = out.stdout_json();
    let iss = auth.issuer();
    assert_eq!(v["server"], json!("web"));
    assert_eq!(v["url"], json!(mcp.url()));
    assert_eq!(v["status"], json!(401));
    assert_eq!(
        v["challenges"],
        json!([{"scheme": "bearer",
                "params": {"resource_metadata": mcp.prm_url()}}])
    );
    assert_eq!(v["resource_metadata"]["source"], json!(mcp.prm_url()));
    assert_eq!(
        v["resource_metadata"]["document"]["authorization_servers"],
        json!([iss])
    );
    let a = &v["authorization_servers"];
    assert_eq!(a.as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(a[0]["issuer"], json!(iss));
    assert_eq!(a[0]["ok"], json!(true));
    assert_eq!(
        a[0]["source"],
        json!(format!("{iss}/.well-known/oauth-authorization-server"))
    );
    assert_eq!(
        a[0]["metadata"]["token_endpoint"],
        json!(auth.token_endpoint())
    );
    assert_eq!(
        v["suggested_oauth"],
        json!({"client_id": "<the client id registered for rivumi-mcp>",
               "authorization_server": iss,
               "scopes": ["mcp:tools"], "redirect_port": 8976})
    );
    assert!(!creds(&dir).exists());
}

#[test]
fn discover_refuses_metadata_for_another_resource() {
    let (dir, auth, mcp) = discover_setup(
        "login_discover_other",
        Some("https://other.example/mcp"),
    );
    let out = cmd(&dir, &["discover", "web"]).assert_exit(4);
    assert_eq!(
        out.stderr,
        format!(
            "rivumi-mcp: server 'web': protected resource metadata at {} is \
             for 'https://other.example/mcp', not for {}; refusing to \
             authorize (RFC 9728 §3.3)\n",
            mcp.prm_url(),
            mcp.url()
        )
    );
    assert_eq!(out.stdout, "");
    assert!(auth.requests().is_empty(), "{}", auth.summary());
    assert!(!creds(&dir).exists());
}

// ---------------------------------------------------------------------------
// Secrets
// ---------------------------------------------------------------------------

#[test]
fn no_secret_in_output_or_journal() {
    let opts = AsOptions {
        code: "code-planted-1234".into(),
        access_token: "tok-planted-5678".into(),
        refresh_token: Some("ref-planted-9012".into()),
        client_secret: Some("sec-planted-3456".into()),
        auth_methods: Some(vec!["client_secret_post".into()]),
        expires_in: Some(3600),
        ..AsOptions::default()
    };
    let (dir, auth, mcp) = setup("login_secrets", opts, "");
    let mut oauth = discovered(&auth);
    oauth["client_secret_env_var"] = json!("RIVUMI_TEST_SECRET");
    config(&dir, &mcp.url(), oauth);
    let journal = dir.path("j.jsonl");
    let j = journal.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut a = vec!["-v", "--journal", j];
        a.extend_from_slice(args);
        cmd(&dir, &a)
            .env("RIVUMI_TEST_SECRET", "sec-planted-3456")
            .assert_exit(0)
    };
    let mut outs = vec![
        run(&["login", "web", "--timeout", "15"]),
        run(&["list", "web"]),
        run(&["call", "-y", "mcp__web__echo", "text=hi"]),
    ];
    outs.push(cmd(&dir, &["-v", "status"]).assert_exit(0));
    outs.push(cmd(&dir, &["status", "--json"]).assert_exit(0));
    // The secrets were used.
    let f = form_decode(&auth.token_requests()[0].body);
    assert_eq!(param(&f, "code"), "code-planted-1234");
    assert_eq!(param(&f, "client_secret"), "sec-planted-3456");
    let verifier = param(&f, "code_verifier").to_string();
    assert_eq!(
        mcp.requests().last().unwrap().header("authorization"),
        Some("Bearer tok-planted-5678")
    );
    let journal_text = std::fs::read_to_string(&journal).unwrap();
    assert_contains(&journal_text, "login_completed");
    for secret in [
        "code-planted-1234",
        "tok-planted-5678",
        "ref-planted-9012",
        "sec-planted-3456",
        verifier.as_str(),
    ] {
        for o in &outs {
            assert_absent(&o.all(), secret);
        }
        assert_absent(&journal_text, secret);
    }
}
