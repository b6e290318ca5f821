//! Hostile inputs to the authorization parts, through the real binary:
//! local clients that trickle, stay silent or flood the login callback
//! port; a dynamically registered client that must never be presented to
//! another authorization server; credential files of a shape this version
//! does not understand, and store directories others could change; token
//! answers whose `expires_in` says the token is already expired.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use crate::util::oauth::{
    AsOptions, AuthServer, CLIENT, OAuthSite, PrmAt, ProtectedMcp,
    SiteOptions, browser_log, browser_url, config, creds, last_line, param,
    query, read_json, wait_until, web_command as cmd, write_browser,
    write_idle_browser,
};
use crate::util::{Dir, Output, assert_absent, wait_with_timeout};

// ---------------------------------------------------------------------------
// The login callback among hostile local clients
// ---------------------------------------------------------------------------

/// A browser step that waits for the file `go` in the Dir before it
/// follows the redirect to the callback.
const WAIT_FOR_GO: &str = "while [ ! -e \"$d/go\" ]; do sleep 0.05; done\n";

/// Local clients misbehaving on the callback port until dropped.
struct Hostile {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<String>>,
}

impl Hostile {
    /// Connects, in this order: a client that trickles a byte per 100 ms
    /// forever, one that sends nothing, one that sends a 1 MiB header, one
    /// that sends bytes that are not text, and one that asks for another
    /// path. Returns once all are connected (and have sent their first
    /// bytes); each thread ends with the status line it got, if any.
    fn connect(port: u16) -> Hostile {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = vec![];
        let open =
            || TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let big = {
            let mut b = b"GET /callback HTTP/1.1\r\nX-Big: ".to_vec();
            b.extend(std::iter::repeat_n(b'a', 1 << 20));
            b.extend_from_slice(b"\r\n\r\n");
            b
        };
        let clients: Vec<(TcpStream, Vec<u8>, bool)> = vec![
            (open(), b"GET /callback?state=x HTTP/1.1\r\nX: ".to_vec(), true),
            (open(), vec![], false),
            (open(), big, false),
            (open(), [&[0xffu8; 4096][..], b"\r\n\r\n"].concat(), false),
            (
                open(),
                format!(
                    "GET /other HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
                )
                .into_bytes(),
                false,
            ),
        ];
        for (mut s, first, trickle) in clients {
            let stop = stop.clone();
            let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
            // The write of a large head may block until it is read, so it
            // happens on the client's thread.
            threads.push(std::thread::spawn(move || {
                let _ = s.write_all(&first);
                let mut got = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    if trickle && s.write_all(b"a").is_err() {
                        break;
                    }
                    let mut buf = [0u8; 512];
                    match s.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                        Err(_) => {}
                    }
                }
                let text = String::from_utf8_lossy(&got).into_owned();
                text.lines().next().unwrap_or("").to_string()
            }));
        }
        // Let them get ahead of any honest request in the accept queue.
        std::thread::sleep(Duration::from_millis(300));
        Hostile { stop, threads }
    }

    /// Stops the clients; the status lines they got, in connect order.
    fn finish(self) -> Vec<String> {
        self.stop.store(true, Ordering::SeqCst);
        self.threads.into_iter().map(|t| t.join().unwrap()).collect()
    }
}

/// An authorization server, an MCP server that wants its token, and a
/// Dir whose browser runs `before` ahead of the callback.
fn login_setup(test: &str, before: &str) -> (Dir, AuthServer, ProtectedMcp) {
    let opts = AsOptions::default();
    let token = opts.access_token.clone();
    let auth = AuthServer::start(opts);
    let mcp = ProtectedMcp::start(&token, &auth.issuer(), None);
    let dir = Dir::new(test);
    config(
        &dir,
        &mcp.url(),
        json!({"client_id": CLIENT, "authorization_server": auth.issuer()}),
    );
    write_browser(&dir, before);
    (dir, auth, mcp)
}

/// The port of the `redirect_uri` in the authorization URL the browser
/// was started with.
fn callback_port(dir: &Dir) -> u16 {
    let url = browser_url(dir).expect("the browser was started");
    let redirect = param(&query(&url), "redirect_uri").to_string();
    let rest = redirect.strip_prefix("http://127.0.0.1:").expect("loopback");
    rest.split('/').next().unwrap().parse().expect("a port")
}

#[test]
fn the_callback_serves_the_browser_among_hostile_clients() {
    let (dir, auth, _mcp) = login_setup("hostile_callback", WAIT_FOR_GO);
    let c = cmd(&dir, &["login", "web", "--timeout", "20"]);
    let child = c.spawn();
    assert!(
        wait_until(Duration::from_secs(10), || browser_url(&dir).is_some())
    );
    let hostile = Hostile::connect(callback_port(&dir));
    let go = Instant::now();
    dir.write("go", "");
    let out = wait_with_timeout(child, &c);
    let took = go.elapsed();
    let statuses = hostile.finish();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(browser_log(&dir), ["callback 200"]);
    // Well before a slow client's head deadline (5 s), let alone the
    // trickler's forever.
    assert!(took < Duration::from_secs(4), "the login took {took:?}");
    assert_eq!(auth.token_requests().len(), 1);
    // Served side by side: the trickler and the silent client got
    // nothing; the others their error answers.
    assert_eq!(
        [&statuses[0], &statuses[1], &statuses[3], &statuses[4]],
        ["", "", "HTTP/1.1 400 Bad Request", "HTTP/1.1 404 Not Found"]
    );
    // The huge head is cut off: a 431, unless the reset of the unread
    // rest overtook it.
    assert!(
        ["", "HTTP/1.1 431 Request Header Fields Too Large"]
            .contains(&statuses[2].as_str()),
        "{statuses:?}"
    );
}

#[test]
fn a_login_only_hostile_clients_reach_ends_at_its_timeout() {
    let (dir, auth, _mcp) = login_setup("hostile_callback_timeout", "");
    write_idle_browser(&dir);
    let c = cmd(&dir, &["login", "web", "--timeout", "2"]);
    let child = c.spawn();
    assert!(
        wait_until(Duration::from_secs(10), || browser_url(&dir).is_some())
    );
    // The 2 s run from when the callback listens, which is before the
    // browser is started: measure from there (discovery before it may be
    // slow on a loaded machine, and is not what this test is about).
    let start = Instant::now();
    let hostile = Hostile::connect(callback_port(&dir));
    let out = wait_with_timeout(child, &c);
    let took = start.elapsed();
    hostile.finish();
    assert_eq!(out.code, Some(5), "{}", out.stderr);
    assert_eq!(
        last_line(&out),
        "rivumi-mcp: server 'web': timed out after 2s waiting for the \
         login callback"
    );
    assert!(took < Duration::from_millis(4000), "the login took {took:?}");
    assert!(auth.token_requests().is_empty());
    assert!(!creds(&dir).exists());
}

// ---------------------------------------------------------------------------
// A registered client is presented only where it was registered
// ---------------------------------------------------------------------------

/// Every byte of `site`'s requests that could carry a client credential.
fn wire(site: &OAuthSite) -> String {
    site.requests()
        .iter()
        .map(|r| {
            format!("{} {} {:?} {}\n", r.method, r.path, r.headers, r.body)
        })
        .collect()
}

/// Asserts that nothing `site` received carries the client `dyn-1` or its
/// secret (in a query, a form, JSON or a Basic header).
#[track_caller]
fn assert_never_saw_dyn_1(site: &OAuthSite) {
    let w = wire(site);
    let basic =
        base64::engine::general_purpose::STANDARD.encode("dyn-1:dyn-secret-1");
    for secret in ["dyn-1", "dyn-secret-1", &basic] {
        assert_absent(&w, secret);
    }
}

/// `login web` with the browser and a short callback deadline.
fn login(dir: &Dir) -> Output {
    cmd(dir, &["login", "web", "--timeout", "15"]).run()
}

/// An authorization server and MCP server on one origin without any
/// metadata (MCP 2025-03-26 default endpoints), registering clients
/// `{prefix}N`.
fn bare_site(prefix: &str) -> OAuthSite {
    OAuthSite::start(SiteOptions {
        authorization_server: true,
        as_metadata: false,
        mcp: true,
        prm: PrmAt::Nowhere,
        client_prefix: prefix.into(),
        ..SiteOptions::default()
    })
}

#[test]
fn a_registration_without_an_issuer_stays_at_its_token_endpoints_origin() {
    let a = bare_site("dyn-");
    let b = bare_site("other-");
    let dir = Dir::new("hostile_dcr_origin");
    write_browser(&dir, "");
    config(&dir, &a.url(), json!({"registration": "dynamic"}));
    let out = login(&dir);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let e = &read_json(&creds(&dir))["servers"]["web"];
    assert_eq!(e["registration"]["client_id"], json!("dyn-1"));
    assert_eq!(e["registration"]["issuer"], Value::Null);
    assert_eq!(
        e["registration"]["token_endpoint"],
        json!(format!("{}/token", a.issuer()))
    );

    // The server moves to another origin: a new registration there.
    config(&dir, &b.url(), json!({"registration": "dynamic"}));
    let out = login(&dir);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_never_saw_dyn_1(&b);
    assert_eq!(b.register_requests().len(), 1, "{}", b.summary());
    let q = query(&b.authorize_requests()[0].path);
    assert_eq!(param(&q, "client_id"), "other-1");
    let e = &read_json(&creds(&dir))["servers"]["web"];
    assert_eq!(e["client_id"], json!("other-1"));
    assert!(
        out.stderr.contains(&format!(
            "rivumi-mcp: warning: server 'web': the stored dynamic \
             registration was made at another authorization server \
             ({}/token); it is not presented to {}/token\n",
            a.issuer(),
            b.issuer()
        )),
        "{}",
        out.stderr
    );
}

/// Authorization servers A (clients `dyn-N`) and B (`other-N`) with
/// metadata, registration (`client_secret_post`) and refresh tokens; an
/// MCP server whose resource metadata names A; and a Dir logged in to it
/// through a registration at A.
fn registered_at_a(test: &str) -> (OAuthSite, OAuthSite, OAuthSite, Dir) {
    let reg = |prefix: &str| SiteOptions {
        registration: true,
        refresh_tokens: true,
        auth_methods: Some(vec!["client_secret_post".into()]),
        client_prefix: prefix.into(),
        ..SiteOptions::auth_server()
    };
    let a = OAuthSite::start(reg("dyn-"));
    let b = OAuthSite::start(reg("other-"));
    let mcp = OAuthSite::start(SiteOptions::mcp_for(&a));
    let dir = Dir::new(test);
    write_browser(&dir, "");
    config(&dir, &mcp.url(), json!({"registration": "dynamic"}));
    let out = login(&dir);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(a.register_requests().len(), 1);
    (a, b, mcp, dir)
}

#[test]
fn a_registration_is_not_presented_to_another_issuer() {
    let (a, b, mcp, dir) = registered_at_a("hostile_dcr_issuer");

    // The resource metadata now names B.
    mcp.point_at(&b.issuer());
    let out = login(&dir);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_never_saw_dyn_1(&b);
    assert_eq!(b.register_requests().len(), 1, "{}", b.summary());
    assert_eq!(a.register_requests().len(), 1);
    let e = &read_json(&creds(&dir))["servers"]["web"];
    assert_eq!(e["registration"]["issuer"], json!(b.issuer()));
    // Registrations are kept per authorization server: A's is kept beside.
    assert_eq!(e["other_registrations"][0]["client_id"], json!("dyn-1"));

    // Back to A: A's own registration is reused (no new one), and B's
    // client never reaches A.
    mcp.point_at(&a.issuer());
    let out = login(&dir);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(a.register_requests().len(), 1, "{}", a.summary());
    let q = query(&a.authorize_requests().last().unwrap().path);
    assert_eq!(param(&q, "client_id"), "dyn-1");
    assert!(!wire(&a).contains("other-1"), "{}", a.summary());
    let e = &read_json(&creds(&dir))["servers"]["web"];
    assert_eq!(e["client_id"], json!("dyn-1"));
    assert_eq!(e["other_registrations"][0]["client_id"], json!("other-1"));
    assert_eq!(e["other_registrations"].as_array().unwrap().len(), 1);
}

#[test]
fn a_migrated_authorization_server_gets_its_own_client_inline() {
    let (a, b, mcp, dir) = registered_at_a("hostile_dcr_migration");
    let seen_at_a = a.requests().len();
    // SEP-2352: the resource now names B and accepts only B's tokens; the
    // stored token from A earns a 401.
    mcp.point_at(&b.issuer());
    mcp.trust(b.ledger());
    let out = cmd(&dir, &["list", "--step-up", "web"]).run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    // The resource metadata was read again, a client registered at B and
    // used there; A's client never reached B, and A heard nothing.
    assert_eq!(b.register_requests().len(), 1, "{}", b.summary());
    let q = query(&b.authorize_requests()[0].path);
    assert_eq!(param(&q, "client_id"), "other-1");
    assert_never_saw_dyn_1(&b);
    assert_eq!(a.requests().len(), seen_at_a, "{}", a.summary());
    let posts = mcp.mcp_requests();
    let last = posts.last().expect("requests");
    assert_eq!(last.status, Some(200));
    assert_eq!(last.header("authorization"), Some("Bearer at-1"));
    assert!(
        posts.iter().any(|r| r.status == Some(401)
            && r.header("authorization") == Some("Bearer at-1")),
        "{}",
        mcp.summary()
    );
    // The entry is B's now, keyed by its issuer as published.
    let e = &read_json(&creds(&dir))["servers"]["web"];
    assert_eq!(e["issuer"], json!(b.issuer()));
    assert_eq!(e["client_id"], json!("other-1"));
    assert_eq!(e["registration"]["issuer"], json!(b.issuer()));
    assert_eq!(e["token_endpoint"], json!(format!("{}/token", b.issuer())));
}

#[test]
fn a_refresh_never_presents_the_registration_elsewhere() {
    let (_a, b, _mcp, dir) = registered_at_a("hostile_dcr_refresh");
    // The entry's token endpoint now says B (an entry written by an older
    // version, or edited): the registration made at A stays with A.
    let path = creds(&dir);
    let mut v = read_json(&path);
    let b_token = format!("{}/token", b.issuer());
    v["servers"]["web"]["token_endpoint"] = json!(b_token);
    v["servers"]["web"]["issuer"] = json!(format!("{}/", b.issuer()));
    std::fs::write(&path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let out = cmd(&dir, &["login", "web", "--refresh"]).run();
    assert_eq!(out.code, Some(6), "{}", out.stderr);
    assert_eq!(
        last_line(&out),
        format!(
            "rivumi-mcp: server 'web': the stored dynamic registration \
             was not made at the token endpoint {b_token}; it is not \
             presented there (run 'rivumi-mcp login web')"
        )
    );
    assert!(b.requests().is_empty(), "{}", b.summary());
}

// ---------------------------------------------------------------------------
// The credential store never loses data
// ---------------------------------------------------------------------------

/// A valid entry for `web`.
fn good_entry() -> Value {
    json!({"url": "http://127.0.0.1:9/mcp",
           "token_endpoint": "http://127.0.0.1:9/token",
           "client_id": "c", "access_token": "tok-kept"})
}

/// Writes the credential file (mode 0600) with these bytes.
fn write_store(dir: &Dir, bytes: &str) -> std::path::PathBuf {
    let p = dir.write("store/credentials.json", bytes);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))
        .unwrap();
    p
}

/// Runs login, logout and status; each must refuse with `line` (exit 3)
/// and leave the file's bytes as they were.
#[track_caller]
fn refused_untouched(dir: &Dir, path: &Path, line: &str) {
    let before = std::fs::read(path).unwrap();
    for args in [
        &["login", "web", "--timeout", "5"][..],
        &["logout", "web"],
        &["status"],
    ] {
        let out = cmd(dir, args).run();
        assert_eq!(out.code, Some(3), "{args:?}: {}", out.stderr);
        assert_eq!(last_line(&out), line, "{args:?}");
        assert_eq!(out.stdout, "", "{args:?}");
        assert_eq!(std::fs::read(path).unwrap(), before, "{args:?}");
    }
    assert!(browser_url(dir).is_none(), "no login was started");
}

#[test]
fn a_credential_file_of_an_unknown_shape_is_left_as_it_is() {
    let (dir, auth, _mcp) = login_setup("hostile_store_shapes", "");
    let mut other = good_entry();
    other["mtls_certificate"] = json!("from a newer version");
    let mut wrong_type = good_entry();
    wrong_type["expires_at"] = json!("soon");
    let mut missing = good_entry();
    missing.as_object_mut().unwrap().remove("access_token");
    let cases = [
        (
            json!({"version": 2, "servers": {"web": good_entry()}}),
            "version 2, not 1",
        ),
        (json!({"servers": {"web": good_entry()}}), "no version"),
        (json!({"version": "1", "servers": {}}), "version: not 1"),
        (
            json!({"version": 1, "servers": [good_entry()]}),
            "servers: not an object",
        ),
        (json!([good_entry()]), "the top level is not a JSON object"),
        (
            json!({"version": 1, "servers": {}, "keys": {}}),
            "unknown top-level field 'keys'",
        ),
        (
            json!({"version": 1, "servers": {"web": good_entry(), "ci": other}}),
            "entry 'ci': unknown field 'mtls_certificate'",
        ),
        (
            json!({"version": 1, "servers": {"web": wrong_type}}),
            "entry 'web': expires_at: not a whole number of seconds",
        ),
        (
            json!({"version": 1, "servers": {"web": good_entry(), "ci": missing}}),
            "entry 'ci': access_token: missing",
        ),
        (
            json!({"version": 1, "servers": {"web": good_entry(), "ci": "x"}}),
            "entry 'ci': not a JSON object",
        ),
    ];
    for (doc, at) in cases {
        let p = write_store(&dir, &format!("{doc:#}\n"));
        let line = format!(
            "rivumi-mcp: credential file {}: {at}; this version of \
             rivumi-mcp does not understand it, so the file is left as it \
             is and nothing is written",
            p.display()
        );
        refused_untouched(&dir, &p, &line);
    }
    assert!(auth.requests().is_empty(), "{}", auth.summary());
}

#[test]
fn a_store_directory_others_can_change_is_refused() {
    let (dir, auth, _mcp) = login_setup("hostile_store_dir", "");
    let doc = json!({"version": 1, "servers": {"web": good_entry()}});
    let p = write_store(&dir, &format!("{doc:#}\n"));
    let store = dir.path("store");
    for mode in [0o777, 0o770, 0o1777] {
        std::fs::set_permissions(
            &store,
            std::fs::Permissions::from_mode(mode),
        )
        .unwrap();
        let line = format!(
            "rivumi-mcp: credential directory {0} has mode {1:03o}: others \
             can replace the credential file (run: chmod go-w {0})",
            store.display(),
            mode & 0o777
        );
        refused_untouched(&dir, &p, &line);
    }
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o700))
        .unwrap();
    // A symbolic link to a good directory is refused too.
    std::fs::rename(&store, dir.path("real-store")).unwrap();
    std::os::unix::fs::symlink(dir.path("real-store"), &store).unwrap();
    let line = format!(
        "rivumi-mcp: credential directory {} is a symbolic link; refusing it",
        store.display()
    );
    refused_untouched(&dir, &p, &line);
    assert!(auth.requests().is_empty(), "{}", auth.summary());
    // The same file in a directory of its own is fine.
    std::fs::remove_file(&store).unwrap();
    std::fs::rename(dir.path("real-store"), &store).unwrap();
    let out = cmd(&dir, &["status"]).run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

// ---------------------------------------------------------------------------
// expires_in <= 0
// ---------------------------------------------------------------------------

#[test]
fn a_token_that_expires_in_zero_or_less_is_never_sent() {
    for expires_in in [0, -1, -3600] {
        let opts =
            AsOptions { expires_in: Some(expires_in), ..AsOptions::default() };
        let token = opts.access_token.clone();
        let auth = AuthServer::start(opts);
        let mcp = ProtectedMcp::start(&token, &auth.issuer(), None);
        let dir = Dir::new("hostile_expires_in");
        config(
            &dir,
            &mcp.url(),
            json!({"client_id": CLIENT, "authorization_server": auth.issuer()}),
        );
        write_browser(&dir, "");
        let out = login(&dir);
        assert_eq!(out.code, Some(0), "{expires_in}: {}", out.stderr);
        let e = &read_json(&creds(&dir))["servers"]["web"];
        let at = e["expires_at"].as_u64().expect("an expiry is stored");
        assert!(at <= e["obtained_at"].as_u64().unwrap(), "{e}");
        let out = cmd(&dir, &["list", "web"]).run();
        assert_eq!(out.code, Some(6), "{expires_in}: {}", out.stderr);
        assert!(
            last_line(&out).starts_with(
                "rivumi-mcp: server 'web': the stored token expired at "
            ),
            "{}",
            out.stderr
        );
        assert!(mcp.requests().is_empty(), "{}", mcp.summary());
        let out = cmd(&dir, &["status"]).run();
        assert!(
            out.stdout.contains("web     oauth  authorization_code  expired "),
            "{}",
            out.stdout
        );
    }
}

#[test]
fn with_step_up_a_token_that_expires_in_zero_or_less_starts_a_new_login() {
    let opts = AsOptions { expires_in: Some(-1), ..AsOptions::default() };
    let token = opts.access_token.clone();
    let auth = AuthServer::start(opts);
    let mcp = ProtectedMcp::start(&token, &auth.issuer(), None);
    let dir = Dir::new("hostile_expires_in_step_up");
    config(
        &dir,
        &mcp.url(),
        json!({"client_id": CLIENT, "authorization_server": auth.issuer(),
               "step_up": true}),
    );
    write_browser(&dir, "");
    let out = login(&dir);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let out = cmd(&dir, &["list", "web"]).run();
    // The stored token is not sent: the first request goes without one,
    // and its 401 starts a second authorization.
    let first = &mcp.requests()[0];
    assert_eq!(first.header("authorization"), None, "{}", mcp.summary());
    assert_eq!(first.status, Some(401));
    assert_eq!(auth.token_requests().len(), 2, "{}", auth.summary());
    // The token that step-up obtained is expired on arrival too: it is
    // never sent, and the command says why instead of asking again.
    assert!(
        mcp.requests().iter().all(|r| r.header("authorization").is_none()),
        "{}",
        mcp.summary()
    );
    assert_eq!(out.code, Some(6), "{}", out.stderr);
    assert!(out.stderr.contains("already expired"), "{}", out.stderr);
}

// ---------------------------------------------------------------------------
// Discovered URLs may not point inside (issue 22, item 16)
// ---------------------------------------------------------------------------

/// The test-only switch that treats the configured server as outside
/// (every test server is on loopback).
const OUTSIDE: &str = "RIVUMI_MCP_TEST_SERVER_OUTSIDE";

/// What a remote server names by discovery (the 401's
/// `resource_metadata`, its authorization server) may not be on a
/// loopback, private or link-local address unless the configured server
/// is on one itself; its own origin is never refused. Refused before any
/// request goes there, `login` and `discover` alike.
#[test]
fn discovered_urls_may_not_point_inside() {
    let auth = OAuthSite::start(SiteOptions::auth_server());
    let cases = [
        (
            "the authorization server",
            SiteOptions::mcp_for(&auth),
            format!(
                "authorization server {}/ points inside (127.0.0.1",
                auth.issuer()
            ),
        ),
        (
            "a metadata service",
            SiteOptions {
                prm_hint: Some(
                    "https://169.254.169.254/latest/meta-data".into(),
                ),
                ..SiteOptions::mcp_for(&auth)
            },
            "the resource_metadata URL from the 401 \
             https://169.254.169.254/latest/meta-data points inside \
             (169.254.169.254"
                .to_string(),
        ),
        (
            "a hint on another local origin",
            SiteOptions {
                prm_hint: Some(format!(
                    "{}/.well-known/oauth-protected-resource",
                    auth.issuer()
                )),
                ..SiteOptions::mcp_for(&auth)
            },
            "the resource_metadata URL from the 401".to_string(),
        ),
        (
            "a private address by name",
            SiteOptions {
                prm_authorization_server: Some("https://localhost:1".into()),
                ..SiteOptions::mcp_for(&auth)
            },
            "authorization server https://localhost:1/ points inside"
                .to_string(),
        ),
    ];
    for (what, opts, want) in cases {
        let mcp = OAuthSite::start(opts);
        let dir = Dir::new("hostile_auth_inside");
        write_browser(&dir, "");
        config(&dir, &mcp.url(), json!({"client_id": CLIENT}));
        let out = cmd(&dir, &["login", "web", "--timeout", "15"])
            .env(OUTSIDE, "1")
            .assert_exit(3);
        let line = last_line(&out);
        assert!(line.contains(&want), "{what}: {line}");
        assert!(
            line.contains(&format!(
                "and the configured server {}",
                mcp.issuer()
            )),
            "{what}: {line}"
        );
        assert!(auth.requests().is_empty(), "{what}: {}", auth.summary());
        assert_eq!(browser_url(&dir), None, "{what}");
        // `discover` reports an authorization server it refuses among
        // the others (exit 0), and stops at a refused hint (exit 3).
        let out = cmd(&dir, &["discover", "web"]).env(OUTSIDE, "1").run();
        assert!(out.all().contains(&want), "{what}: {}", out.all());
        assert!(auth.requests().is_empty(), "{what}: {}", auth.summary());
    }
    // The same servers, the configured one on loopback as it really is:
    // its discoveries may point there too.
    let mcp = OAuthSite::start(SiteOptions::mcp_for(&auth));
    let dir = Dir::new("hostile_auth_inside_ok");
    config(&dir, &mcp.url(), json!({"client_id": CLIENT}));
    cmd(&dir, &["discover", "web"]).assert_exit(0);
    assert!(!auth.requests().is_empty());
    // An authorization server on the configured server's own origin is
    // never refused.
    let both = OAuthSite::start(SiteOptions {
        authorization_server: true,
        mcp: true,
        ..SiteOptions::default()
    });
    let dir = Dir::new("hostile_auth_inside_same_origin");
    config(&dir, &both.url(), json!({"client_id": CLIENT}));
    cmd(&dir, &["discover", "web"]).env(OUTSIDE, "1").assert_exit(0);
}
