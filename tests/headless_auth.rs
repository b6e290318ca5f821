//! Logging in where no browser can reach the loopback callback, refresh
//! the operator opted in to, and credentials from a command, through the
//! real binary against the [`OAuthSite`] of `util/oauth.rs`:
//!
//! - the device authorization grant (RFC 8628): pending, slow_down,
//!   denied, expired, success, the login's --timeout, and a verification
//!   URI with terminal escapes shown sanitised;
//! - paste-back (`login --no-browser`): the redirect address read from
//!   stdin, checked like the callback (state, iss, the redirect URI);
//! - `"refresh": "auto"` / `--refresh`: twelve commands with one expired
//!   token make one refresh request; a 401 `invalid_token` refreshes and
//!   retries once; a failed refresh leaves the credential file as it was;
//! - `token_command`: its output is the bearer token and appears in no
//!   output and no journal; a failure names the exit status only; its
//!   argv is pinned by the fingerprint; it gets the helper variables only
//!   and a bounded stdout.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::http::Request;
use crate::util::oauth::{
    CLIENT, DeviceScript, LIST_OUT, LOGIN_ARGS, OAuthSite, SiteOptions,
    USER_CODE, config, creds, expire_stored_token, form_decode, last_line,
    param, read_json, s256, web_command, write_browser,
};
use crate::util::{
    Dir, Output, TestCommand, assert_absent, wait_with_timeout,
};

/// An authorization server with `auth`, and an MCP server that accepts
/// its tokens.
fn pair(auth: SiteOptions) -> (OAuthSite, OAuthSite) {
    let a = OAuthSite::start(auth);
    let m = OAuthSite::start(SiteOptions::mcp_for(&a));
    (a, m)
}

/// A Dir with the scripted browser and server `web` at `mcp`.
fn web_dir(test: &str, mcp: &OAuthSite, oauth: Value) -> Dir {
    let dir = Dir::new(test);
    write_browser(&dir, "");
    config(&dir, &mcp.url(), oauth);
    dir
}

fn bare() -> Value {
    json!({"client_id": CLIENT})
}

/// The token requests with this grant type.
fn grants(auth: &OAuthSite, grant: &str) -> Vec<Request> {
    auth.token_requests()
        .into_iter()
        .filter(|r| param(&form_decode(&r.body), "grant_type") == grant)
        .collect()
}

fn entry(dir: &Dir) -> Value {
    read_json(&creds(dir))["servers"]["web"].clone()
}

// ---------------------------------------------------------------------------
// The device authorization grant
// ---------------------------------------------------------------------------

const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

fn device_pair(script: DeviceScript) -> (OAuthSite, OAuthSite) {
    pair(SiteOptions {
        device: Some(script),
        refresh_tokens: true,
        expires_in: Some(3600),
        ..SiteOptions::auth_server()
    })
}

fn device_login(dir: &Dir) -> TestCommand {
    web_command(dir, &["login", "web", "--device", "--timeout", "20"])
}

#[test]
fn device_login_polls_until_the_person_approves() {
    let (auth, mcp) = device_pair(DeviceScript {
        before: vec!["authorization_pending", "authorization_pending"],
        complete: true,
        ..DeviceScript::default()
    });
    let dir = web_dir("headless_device_ok", &mcp, bare());
    let out = device_login(&dir).assert_exit(0);
    let page = format!("{}/device-page", auth.issuer());
    assert_eq!(
        out.stderr,
        format!(
            "rivumi-mcp: to log in to 'web', open this URL on any \
             device:\n\n  {page}\n\nand enter the code:\n\n  {USER_CODE}\n\n\
             (or open this URL, which carries the code:\n\n  \
             {page}?user_code={USER_CODE}\n)\n\n"
        )
    );
    assert!(out.stdout.starts_with("logged in to 'web'"), "{}", out.stdout);
    // The device authorization request: the client, scope, resource and
    // the PKCE challenge.
    let d: Vec<Request> =
        auth.requests().into_iter().filter(|r| r.path == "/device").collect();
    assert_eq!(d.len(), 1, "{}", auth.summary());
    let f = form_decode(&d[0].body);
    assert_eq!(param(&f, "client_id"), CLIENT);
    assert_eq!(param(&f, "resource"), mcp.url());
    assert_eq!(param(&f, "code_challenge_method"), "S256");
    let challenge = param(&f, "code_challenge").to_string();
    // Three polls at the server's interval (1 s), the last one answered
    // with the tokens; the verifier matches the challenge.
    let polls = grants(&auth, DEVICE_GRANT);
    assert_eq!(polls.len(), 3, "{}", auth.summary());
    for r in &polls {
        let f = form_decode(&r.body);
        assert_eq!(param(&f, "device_code"), "dc-1");
        assert_eq!(s256(param(&f, "code_verifier")), challenge);
        assert_eq!(param(&f, "resource"), mcp.url());
    }
    for w in polls.windows(2) {
        let gap = w[1].at.duration_since(w[0].at);
        assert!(gap >= Duration::from_millis(950), "{gap:?}");
    }
    assert_eq!(polls[2].status, Some(200));
    // No browser was started, no authorization request made.
    assert!(!dir.path("browser.log").exists());
    assert!(auth.authorize_requests().is_empty());
    let e = entry(&dir);
    assert_eq!(e["access_token"], json!("at-1"));
    assert_eq!(e["refresh_token"], json!("rt-1"));
    let out = web_command(&dir, &["list", "web"]).assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
}

#[test]
fn device_slow_down_polls_five_seconds_slower() {
    let (auth, mcp) = device_pair(DeviceScript {
        before: vec!["slow_down"],
        ..DeviceScript::default()
    });
    let dir = web_dir("headless_device_slow", &mcp, bare());
    device_login(&dir).assert_exit(0);
    let polls = grants(&auth, DEVICE_GRANT);
    assert_eq!(polls.len(), 2, "{}", auth.summary());
    let gap = polls[1].at.duration_since(polls[0].at);
    assert!(gap >= Duration::from_millis(5950), "{gap:?}");
}

#[test]
fn device_denied_and_expired_end_the_login_with_nothing_stored() {
    for (outcome, said) in [
        ("access_denied", "the authorization was denied on the device page"),
        ("expired_token", "the device code expired before the authorization"),
    ] {
        let (auth, mcp) = device_pair(DeviceScript {
            before: vec!["authorization_pending"],
            outcome: Some(outcome),
            ..DeviceScript::default()
        });
        let dir = web_dir(&format!("headless_device_{outcome}"), &mcp, bare());
        let out = device_login(&dir).assert_exit(6);
        let l = last_line(&out);
        assert!(
            l.starts_with(&format!("rivumi-mcp: server 'web': {said}")),
            "{l}"
        );
        assert_eq!(grants(&auth, DEVICE_GRANT).len(), 2);
        assert!(!creds(&dir).exists());
        assert_eq!(out.stdout, "");
    }
}

#[test]
fn device_code_that_outlives_its_lifetime_is_not_polled_further() {
    // Pending forever, a code that lives two seconds.
    let (auth, mcp) = device_pair(DeviceScript {
        before: vec!["authorization_pending"; 50],
        expires_in: 2,
        ..DeviceScript::default()
    });
    let dir = web_dir("headless_device_lifetime", &mcp, bare());
    let out = device_login(&dir).assert_exit(6);
    assert!(
        last_line(&out).contains("the device code expired"),
        "{}",
        out.stderr
    );
    assert!(grants(&auth, DEVICE_GRANT).len() <= 2, "{}", auth.summary());
}

#[test]
fn device_polling_ends_at_the_login_timeout() {
    // Pending for as long as the code lives (60 s): `--timeout 3` ends
    // the polling, with nothing stored.
    let (auth, mcp) = device_pair(DeviceScript {
        before: vec!["authorization_pending"; 100],
        ..DeviceScript::default()
    });
    let dir = web_dir("headless_device_timeout", &mcp, bare());
    let started = std::time::Instant::now();
    let out =
        web_command(&dir, &["login", "web", "--device", "--timeout", "3"])
            .assert_exit(5);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert_eq!(
        last_line(&out),
        "rivumi-mcp: server 'web': timed out after 3s waiting for the device \
         authorization"
    );
    let polls = grants(&auth, DEVICE_GRANT).len();
    assert!((1..=3).contains(&polls), "{}", auth.summary());
    assert!(!creds(&dir).exists());
}

#[test]
fn a_verification_uri_with_terminal_escapes_is_shown_sanitised() {
    let evil = "https://evil.example/\u{1b}]8;;https://x.example/\u{7}click\
                \u{1b}[2J\u{1b}[1A";
    let (_auth, mcp) = device_pair(DeviceScript {
        verification_uri: Some(evil.to_string()),
        complete: true,
        ..DeviceScript::default()
    });
    // The grant from the config rather than --device.
    let dir = web_dir(
        "headless_device_escapes",
        &mcp,
        json!({"client_id": CLIENT, "grant": "device_code"}),
    );
    let out =
        web_command(&dir, &["login", "web", "--timeout", "20"]).assert_exit(0);
    assert!(!out.stderr.contains('\u{1b}'), "{:?}", out.stderr);
    assert!(!out.stderr.contains('\u{7}'), "{:?}", out.stderr);
    assert!(out.stderr.contains("https://evil.example/"), "{}", out.stderr);
    assert!(out.stderr.contains(USER_CODE), "{}", out.stderr);
}

#[test]
fn device_login_needs_a_device_endpoint_and_a_person() {
    let (auth, mcp) = pair(SiteOptions::auth_server());
    let dir = web_dir("headless_device_none", &mcp, bare());
    let out = device_login(&dir).assert_exit(6);
    assert_eq!(
        last_line(&out),
        "rivumi-mcp: server 'web': the authorization server publishes no \
         device_authorization_endpoint, so the device login (RFC 8628) \
         cannot be used; log in with 'login --no-browser' and paste the \
         address back"
    );
    assert!(auth.token_requests().is_empty());
    // A machine grant has no person to enter a code.
    config(
        &dir,
        &mcp.url(),
        json!({"client_id": CLIENT, "grant": "client_credentials",
               "client_secret_env_var": "S",
               "authorization_server": auth.issuer()}),
    );
    let out = device_login(&dir).env("S", "x").assert_exit(2);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: 'web' logs in with \"grant\": \"client_credentials\", \
         without a person; --device applies to a person's login\n"
    );
}

// ---------------------------------------------------------------------------
// Paste-back
// ---------------------------------------------------------------------------

/// GETs `url` (http on loopback) without following a redirect; returns
/// the `Location`.
fn location_of(url: &str) -> String {
    let rest = url.strip_prefix("http://").expect("http");
    let (host, path) = rest.split_at(rest.find('/').expect("a path"));
    let mut s = TcpStream::connect(host).expect("connect");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    resp.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("location").then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no Location in {resp}"))
}

/// Runs `login web --no-browser`, reads the authorization URL it prints,
/// lets the authorization server grant it, and pastes `edit(location)` on
/// stdin; returns the output (stderr included).
fn paste_login(dir: &Dir, edit: impl FnOnce(&str) -> String) -> Output {
    let c =
        web_command(dir, &["login", "web", "--no-browser", "--timeout", "20"]);
    let mut child = c.spawn();
    let err = child.stderr.take().unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let log = seen.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(u) = line.trim().strip_prefix("http://")
                && u.contains("/authorize?")
            {
                let _ = tx.send(format!("http://{u}"));
            }
            log.lock().unwrap().push_str(&format!("{line}\n"));
        }
    });
    let url = rx.recv_timeout(Duration::from_secs(20)).expect("the URL");
    let pasted = edit(&location_of(&url));
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{pasted}").unwrap();
    let mut out = wait_with_timeout(child, &c);
    drop(stdin);
    reader.join().unwrap();
    out.stderr = seen.lock().unwrap().clone();
    out
}

#[test]
fn paste_back_of_the_redirect_address_logs_in() {
    let (auth, mcp) = pair(SiteOptions::auth_server());
    let dir = web_dir("headless_paste_ok", &mcp, bare());
    let out = paste_login(&dir, |loc| loc.to_string());
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains(
            "rivumi-mcp: then paste here the address the browser ended at"
        ),
        "{}",
        out.stderr
    );
    assert!(!dir.path("browser.log").exists(), "no browser is started");
    let t = grants(&auth, "authorization_code");
    assert_eq!(t.len(), 1);
    assert_eq!(param(&form_decode(&t[0].body), "code"), "code-1");
    assert_eq!(entry(&dir)["access_token"], json!("at-1"));
}

#[test]
fn paste_back_of_only_the_code_logs_in() {
    let (auth, mcp) = pair(SiteOptions::auth_server());
    let dir = web_dir("headless_paste_code", &mcp, bare());
    let out = paste_login(&dir, |loc| {
        let q = loc.split_once('?').unwrap().1;
        param(&form_decode(q), "code").to_string()
    });
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(grants(&auth, "authorization_code").len(), 1);
}

/// How a test changes the address before pasting it.
type Edit = fn(&str) -> String;

#[test]
fn paste_back_with_a_wrong_state_iss_or_address_is_refused() {
    let cases: [(&str, Edit, &str); 3] = [
        (
            "state",
            |loc| loc.replace("state=", "state=x"),
            "rivumi-mcp: server 'web': the pasted address carries another \
             state than this login's (a stale or forged response); refusing \
             it",
        ),
        (
            "iss",
            |loc| format!("{loc}&iss=https%3A%2F%2Fevil.example"),
            "rivumi-mcp: server 'web': the authorization response came from \
             issuer 'https://evil.example', not",
        ),
        (
            "address",
            |loc| loc.replacen("127.0.0.1", "localhost", 1),
            "rivumi-mcp: server 'web': the pasted address 'http://localhost:",
        ),
    ];
    for (name, edit, said) in cases {
        let (auth, mcp) = pair(SiteOptions::auth_server());
        let dir = web_dir(&format!("headless_paste_{name}"), &mcp, bare());
        let out = paste_login(&dir, edit);
        assert_eq!(out.code, Some(6), "{name}: {out:?}");
        let l = out.stderr.lines().last().unwrap_or("").to_string();
        assert!(l.starts_with(said), "{name}: {l}");
        assert!(auth.token_requests().is_empty(), "{name}");
        assert!(!creds(&dir).exists(), "{name}");
    }
}

// ---------------------------------------------------------------------------
// Opt-in refresh
// ---------------------------------------------------------------------------

/// A pair issuing refresh tokens (strictly rotated, answered slowly), an
/// MCP server changed by `mcp`, and a Dir logged in (at-1, rt-1) with
/// this `oauth` block.
fn logged_in_with(
    test: &str,
    oauth: Value,
    mcp: impl FnOnce(SiteOptions) -> SiteOptions,
) -> (Dir, OAuthSite, OAuthSite) {
    let auth = OAuthSite::start(SiteOptions {
        refresh_tokens: true,
        strict_rotation: true,
        expires_in: Some(3600),
        token_delay: Duration::from_millis(200),
        ..SiteOptions::auth_server()
    });
    let mcp = OAuthSite::start(mcp(SiteOptions::mcp_for(&auth)));
    let dir = web_dir(test, &mcp, oauth);
    web_command(&dir, LOGIN_ARGS).assert_exit(0);
    assert_eq!(entry(&dir)["refresh_token"], json!("rt-1"));
    (dir, auth, mcp)
}

fn logged_in(test: &str, oauth: Value) -> (Dir, OAuthSite, OAuthSite) {
    logged_in_with(test, oauth, |m| m)
}

/// The `Authorization` of every MCP POST from index `from` on.
fn bearers_from(mcp: &OAuthSite, from: usize) -> Vec<String> {
    mcp.mcp_requests()[from..]
        .iter()
        .map(|r| r.header("authorization").unwrap_or("").to_string())
        .collect()
}

#[test]
fn twelve_commands_with_an_expired_token_refresh_it_once() {
    let (dir, auth, mcp) = logged_in("headless_refresh_twelve", bare());
    expire_stored_token(&dir);
    let seen = mcp.mcp_requests().len();
    let cmds: Vec<TestCommand> = (0..12)
        .map(|_| web_command(&dir, &["list", "web", "--refresh"]))
        .collect();
    let children: Vec<_> = cmds.iter().map(TestCommand::spawn).collect();
    let outs: Vec<Output> = children
        .into_iter()
        .zip(&cmds)
        .map(|(ch, c)| wait_with_timeout(ch, c))
        .collect();
    for o in &outs {
        assert_eq!(o.code, Some(0), "{o:?}");
        assert_eq!(o.stdout, LIST_OUT);
    }
    // Counted at the token endpoint: one redemption, of rt-1.
    let r = grants(&auth, "refresh_token");
    assert_eq!(r.len(), 1, "{}", auth.summary());
    assert_eq!(param(&form_decode(&r[0].body), "refresh_token"), "rt-1");
    assert_eq!(r[0].status, Some(200));
    let sent = bearers_from(&mcp, seen);
    assert!(!sent.is_empty());
    assert!(sent.iter().all(|b| b == "Bearer at-2"), "{sent:?}");
    let e = entry(&dir);
    assert_eq!(e["access_token"], json!("at-2"));
    assert_eq!(e["refresh_token"], json!("rt-2"));
}

#[test]
fn a_refused_token_is_refreshed_once_and_the_request_retried() {
    let (dir, auth, mcp) = logged_in(
        "headless_refresh_401",
        json!({"client_id": CLIENT, "refresh": "auto"}),
    );
    // The server stops accepting at-1 (revoked, or expired early).
    auth.ledger().revoke("at-1");
    let seen = mcp.mcp_requests().len();
    let out = web_command(&dir, &["list", "web"]).assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
    assert_eq!(grants(&auth, "refresh_token").len(), 1);
    let sent = bearers_from(&mcp, seen);
    assert_eq!(sent[0], "Bearer at-1");
    assert!(sent[1..].iter().all(|b| b == "Bearer at-2"), "{sent:?}");
    assert_eq!(mcp.mcp_requests()[seen].status, Some(401));
}

#[test]
fn a_token_refused_after_its_refresh_is_not_refreshed_again() {
    let (dir, auth, mcp) = logged_in_with(
        "headless_refresh_once",
        json!({"client_id": CLIENT, "refresh": "auto"}),
        |m| SiteOptions { refuse_all: true, ..m },
    );
    let seen = mcp.mcp_requests().len();
    let out = web_command(&dir, &["list", "web"]).assert_exit(6);
    assert_eq!(grants(&auth, "refresh_token").len(), 1, "{}", auth.summary());
    assert_eq!(bearers_from(&mcp, seen), ["Bearer at-1", "Bearer at-2"]);
    assert!(last_line(&out).contains("run 'rivumi-mcp login web'"), "{out:?}");
    assert_eq!(entry(&dir)["access_token"], json!("at-2"));
}

#[test]
fn a_failed_refresh_leaves_the_credential_file_byte_identical() {
    let (dir, auth, mcp) = logged_in("headless_refresh_fails", bare());
    expire_stored_token(&dir);
    // A refresh token the server does not know (revoked).
    let p = creds(&dir);
    let mut v = read_json(&p);
    v["servers"]["web"]["refresh_token"] = json!("rt-revoked");
    std::fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let before = std::fs::read(&p).unwrap();
    let seen = mcp.requests().len();
    let out = web_command(&dir, &["list", "web", "--refresh"]).assert_exit(6);
    let l = last_line(&out);
    assert!(
        l.starts_with(
            "rivumi-mcp: server 'web': the token refresh failed: token \
             endpoint "
        ),
        "{l}"
    );
    assert!(
        l.ends_with(
            "; the stored credential is unchanged (run 'rivumi-mcp login \
             web')"
        ),
        "{l}"
    );
    assert_eq!(grants(&auth, "refresh_token").len(), 1);
    assert_eq!(std::fs::read(&p).unwrap(), before);
    assert_eq!(mcp.requests().len(), seen, "nothing sent with a bad token");
}

// ---------------------------------------------------------------------------
// token_command
// ---------------------------------------------------------------------------

const CMD_TOKEN: &str = "tok-from-the-vault-7f3a";

/// Server `web` at `mcp` authenticated by `token_command` `argv`.
fn command_dir(test: &str, mcp: &OAuthSite, argv: Value) -> Dir {
    let dir = Dir::new(test);
    crate::util::write_mcp_json(
        &dir,
        &[("web", json!({"url": mcp.url(), "token_command": argv}))],
    );
    dir
}

#[test]
fn the_token_command_output_is_the_bearer_and_is_never_shown() {
    let mcp =
        OAuthSite::start(SiteOptions { mcp: true, ..SiteOptions::default() });
    mcp.ledger().issue(CMD_TOKEN, "mcp:tools");
    let script = format!(
        "echo run >> runs.log; echo 'stderr {CMD_TOKEN}' >&2; printf \
         '%s\\n' {CMD_TOKEN}"
    );
    let dir = command_dir(
        "headless_token_command",
        &mcp,
        json!(["sh", "-c", script]),
    );
    let journal = dir.path("j.jsonl");
    let j = journal.to_str().unwrap();
    let out = web_command(&dir, &["-v", "list", "web", "--journal", j])
        .assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
    let sent: Vec<_> = mcp
        .mcp_requests()
        .iter()
        .map(|r| r.header("authorization").unwrap_or("").to_string())
        .collect();
    assert!(!sent.is_empty());
    assert!(sent.iter().all(|b| *b == format!("Bearer {CMD_TOKEN}")));
    assert_absent(&out.all(), CMD_TOKEN);
    let j = std::fs::read_to_string(&journal).unwrap();
    assert_absent(&j, CMD_TOKEN);
    assert!(j.contains("\"token_command\""), "{j}");
    // Run once for the invocation.
    let runs = std::fs::read_to_string(dir.path("runs.log")).unwrap();
    assert_eq!(runs.lines().count(), 1);
    // Its output is not a token of ours: `--json` errors neither.
    let out = web_command(&dir, &["--json", "list", "web"]).assert_exit(0);
    assert_absent(&out.all(), CMD_TOKEN);
}

#[test]
fn a_failing_token_command_names_the_exit_status_only() {
    let mcp =
        OAuthSite::start(SiteOptions { mcp: true, ..SiteOptions::default() });
    let dir = command_dir(
        "headless_token_command_fails",
        &mcp,
        json!(["sh", "-c", "echo SECRET-OUT; echo SECRET-ERR >&2; exit 7"]),
    );
    let out = web_command(&dir, &["list", "web"]).assert_exit(6);
    assert_eq!(
        last_line(&out),
        "rivumi-mcp: server 'web': the token_command 'sh' failed (exit \
         status 7); no token"
    );
    assert_absent(&out.all(), "SECRET");
    assert!(mcp.requests().is_empty());
    // Two tokens on two lines are not one token.
    let dir = command_dir(
        "headless_token_command_two",
        &mcp,
        json!(["printf", "a\\nb\\n"]),
    );
    let out = web_command(&dir, &["list", "web"]).assert_exit(6);
    assert!(
        last_line(&out).contains("printed more than one token"),
        "{out:?}"
    );
}

/// A token command that hangs is ended at its 30 s deadline, its whole
/// process group with it (a helper it started too), and the command fails
/// naming the server and the deadline; nothing reaches the server.
#[test]
fn a_token_command_that_hangs_is_ended_at_its_deadline() {
    let mcp =
        OAuthSite::start(SiteOptions { mcp: true, ..SiteOptions::default() });
    let dir = Dir::new("headless_token_command_hangs");
    let pids = dir.path("pids");
    let script = format!(
        "sleep 300 & echo $! > '{p}'; echo $$ >> '{p}'; wait",
        p = pids.display()
    );
    crate::util::write_mcp_json(
        &dir,
        &[(
            "web",
            json!({"url": mcp.url(),
                         "token_command": ["sh", "-c", script]}),
        )],
    );
    let start = std::time::Instant::now();
    let out = web_command(&dir, &["list", "web"])
        .timeout(std::time::Duration::from_secs(60))
        .assert_exit(6);
    let took = start.elapsed();
    assert_eq!(
        last_line(&out),
        "rivumi-mcp: server 'web': the token_command 'sh' timed out after \
         30s; no token"
    );
    assert!(took >= std::time::Duration::from_secs(29), "{took:?}");
    crate::util::assert_pids_gone(&pids, std::time::Duration::from_secs(5));
    assert!(mcp.requests().is_empty());
}

/// The fingerprint `check-config --json` gives server `web`.
fn web_fingerprint(dir: &Dir) -> String {
    let v = web_command(dir, &["check-config", "--json"])
        .assert_exit(0)
        .stdout_json();
    v["servers"][0]["fingerprint"].as_str().unwrap().to_string()
}

#[test]
fn a_changed_token_command_no_longer_matches_its_pin() {
    let mcp =
        OAuthSite::start(SiteOptions { mcp: true, ..SiteOptions::default() });
    mcp.ledger().issue(CMD_TOKEN, "mcp:tools");
    let dir = command_dir(
        "headless_token_command_pin",
        &mcp,
        json!(["printf", "%s\\n", CMD_TOKEN]),
    );
    let pin = format!("web@{}", web_fingerprint(&dir));
    let out = web_command(&dir, &["list", "web"])
        .env("RIVUMI_MCP_ALLOWLIST", &pin)
        .assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
    let seen = mcp.requests().len();
    // Another command (here one that would also leave a trace) is
    // refused before it runs: nothing runs, nothing is sent.
    let script = format!("echo ran > ran.log; printf '%s\\n' {CMD_TOKEN}");
    let dir2 = command_dir(
        "headless_token_command_pin_changed",
        &mcp,
        json!(["sh", "-c", script]),
    );
    let out = web_command(&dir2, &["list", "web"])
        .env("RIVUMI_MCP_ALLOWLIST", &pin)
        .assert_exit(3);
    assert!(
        last_line(&out).contains(
            "pinned in RIVUMI_MCP_ALLOWLIST but auth \
             changed since"
        ),
        "{out:?}"
    );
    assert!(!dir2.path("ran.log").exists(), "the command ran");
    assert_eq!(mcp.requests().len(), seen);
}

#[test]
fn a_token_command_gets_the_helper_variables_only_and_a_bounded_output() {
    let mcp =
        OAuthSite::start(SiteOptions { mcp: true, ..SiteOptions::default() });
    mcp.ledger().issue(CMD_TOKEN, "mcp:tools");
    // A variable of the invoking environment does not reach it; one a
    // credential helper needs (GnuPG's) does.
    let script = format!(
        "test -z \"$RIVUMI_TEST_LEAK\" || exit 3; \
         test \"$GNUPGHOME\" = /gnupg-home || exit 4; \
         printf '%s\\n' {CMD_TOKEN}"
    );
    let dir = command_dir(
        "headless_token_command_env",
        &mcp,
        json!(["sh", "-c", script]),
    );
    let out = web_command(&dir, &["list", "web"])
        .env("RIVUMI_TEST_LEAK", "from-the-shell")
        .env("GNUPGHOME", "/gnupg-home")
        .assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
    // More than 16 KiB on stdout is no token; none of it is shown.
    let dir = command_dir(
        "headless_token_command_big",
        &mcp,
        json!(["sh", "-c", "head -c 20000 /dev/zero | tr '\\0' q"]),
    );
    let seen = mcp.requests().len();
    let out = web_command(&dir, &["list", "web"]).assert_exit(6);
    assert_eq!(
        last_line(&out),
        "rivumi-mcp: server 'web': the token_command 'sh' printed more than \
         16 KiB; no token"
    );
    assert_absent(&out.all(), "qqqq");
    assert_eq!(mcp.requests().len(), seen);
}

#[test]
fn a_headers_command_supplies_a_header_value_never_shown() {
    let fx = crate::util::http::HttpFixture::mcp(
        crate::util::http::McpScript::new(),
    );
    let dir = Dir::new("headless_headers_command");
    crate::util::write_mcp_json(
        &dir,
        &[(
            "web",
            json!({"url": fx.url(), "headers_command": {
                "X-Api-Key": ["printf", "%s\\n", "Key vault-5ec2"],
            }}),
        )],
    );
    let journal = dir.path("j.jsonl");
    let j = journal.to_str().unwrap();
    let out = web_command(&dir, &["-v", "list", "web", "--journal", j])
        .assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
    let posts: Vec<Request> =
        fx.requests().into_iter().filter(|r| r.method == "POST").collect();
    assert!(!posts.is_empty());
    for r in &posts {
        assert_eq!(r.header("x-api-key"), Some("Key vault-5ec2"));
    }
    assert_absent(&out.all(), "vault-5ec2");
    assert_absent(&std::fs::read_to_string(&journal).unwrap(), "vault-5ec2");

    // A failure names the header and the exit status; nothing is sent.
    let seen = fx.requests().len();
    crate::util::write_mcp_json(
        &dir,
        &[(
            "web",
            json!({"url": fx.url(), "headers_command": {
                "X-Api-Key": ["sh", "-c", "echo vault-5ec2; exit 4"],
            }}),
        )],
    );
    let out = web_command(&dir, &["list", "web"]).assert_exit(6);
    assert_eq!(
        last_line(&out),
        "rivumi-mcp: server 'web': the headers_command 'sh' (header \
         'X-Api-Key') failed (exit status 4); no header"
    );
    assert_absent(&out.all(), "vault-5ec2");
    assert_eq!(fx.requests().len(), seen);
}

#[test]
fn an_expired_token_without_a_refresh_token_says_to_log_in() {
    let (auth, mcp) = pair(SiteOptions {
        expires_in: Some(3600),
        ..SiteOptions::auth_server()
    });
    let dir = web_dir("headless_refresh_none", &mcp, bare());
    web_command(&dir, LOGIN_ARGS).assert_exit(0);
    expire_stored_token(&dir);
    let seen = mcp.requests().len();
    let out = web_command(&dir, &["list", "web", "--refresh"]).assert_exit(6);
    assert_eq!(
        last_line(&out),
        "rivumi-mcp: server 'web': the stored token has expired and no \
         refresh token is stored; run 'rivumi-mcp login web'"
    );
    assert_eq!(grants(&auth, "refresh_token").len(), 0);
    assert_eq!(mcp.requests().len(), seen);
}
