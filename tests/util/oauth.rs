//! An in-process OAuth authorization server, an MCP server that wants its
//! tokens, and a scripted "browser", for the login tests
//! (tests/login.rs).
//!
//! [`AuthServer`] is built on [`HttpFixture`]: RFC 8414 metadata at
//! `/.well-known/oauth-authorization-server`, an authorization endpoint
//! (every path starting with `/auth`) that answers at once with a 302 to
//! the client's `redirect_uri`, and a token endpoint (`/token`) that checks
//! the code, the redirect URI and the PKCE relation before it hands out a
//! token. What it does differently for a test is chosen by [`AsOptions`].
//!
//! [`ProtectedMcp`] is [`McpScript`] behind a bearer check, with RFC 9728
//! protected-resource metadata and a 401 that points at it.
//!
//! [`write_browser`] writes the program rivumi-mcp starts as the browser
//! (`RIVUMI_MCP_BROWSER`): a `sh` script that records its argv[1], GETs it
//! from the authorization server without following the redirect, and then
//! GETs the `Location` (rivumi-mcp's loopback callback) with `curl`.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::Dir;
use super::http::{Conn, HttpFixture, McpScript, Request};

/// What the `iss` parameter of the authorization response is (RFC 9207).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Iss {
    /// No `iss`.
    Omit,
    /// The issuer, as in the metadata.
    Right,
    /// Another issuer.
    Wrong,
}

/// How the token endpoint answers a good request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenAnswer {
    /// JSON with a Bearer token.
    Json,
    /// An HTML page with status 200.
    Html,
    /// JSON with `token_type: "mac"`.
    Mac,
    /// A 302 to another token endpoint on the same server.
    Redirect,
}

/// The behaviour of an [`AuthServer`].
#[derive(Debug, Clone)]
pub struct AsOptions {
    /// The authorization code it issues.
    pub code: String,
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_in: Option<u64>,
    /// `scope` in the token answer.
    pub scope: Option<String>,
    /// Lists S256 in `code_challenge_methods_supported` (else `plain`).
    pub s256: bool,
    /// `token_endpoint_auth_methods_supported`; absent when `None`.
    pub auth_methods: Option<Vec<String>>,
    /// The `issuer` of the metadata when it is not the server's own.
    pub issuer: Option<String>,
    /// `authorization_response_iss_parameter_supported: true`.
    pub iss_supported: bool,
    /// What the authorization response carries as `iss`.
    pub iss: Iss,
    /// Redirect with `error=access_denied` and this description instead
    /// of a code.
    pub deny: Option<String>,
    pub token_answer: TokenAnswer,
    /// The `client_secret` the token endpoint requires (by Basic or by
    /// form field).
    pub client_secret: Option<String>,
}

impl Default for AsOptions {
    fn default() -> AsOptions {
        AsOptions {
            code: "code-0001".into(),
            access_token: "tok-0001".into(),
            refresh_token: None,
            expires_in: None,
            scope: None,
            s256: true,
            auth_methods: None,
            issuer: None,
            iss_supported: false,
            iss: Iss::Omit,
            deny: None,
            token_answer: TokenAnswer::Json,
            client_secret: None,
        }
    }
}

/// The scripted authorization server.
#[derive(Debug)]
pub struct AuthServer {
    fx: HttpFixture,
}

impl AuthServer {
    pub fn start(opts: AsOptions) -> AuthServer {
        let base: Arc<OnceLock<String>> = Arc::new(OnceLock::new());
        let b = base.clone();
        let fx = HttpFixture::start(move |req, conn| {
            let base = b.get().expect("base set after start");
            handle_as(&opts, base, req, conn);
        });
        base.set(format!("http://127.0.0.1:{}", fx.port())).expect("once");
        AuthServer { fx }
    }

    /// `http://127.0.0.1:PORT`: the issuer.
    pub fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.fx.port())
    }

    /// The authorization endpoint of the metadata.
    pub fn authorization_endpoint(&self) -> String {
        format!("{}/authorize", self.issuer())
    }

    /// The token endpoint of the metadata.
    pub fn token_endpoint(&self) -> String {
        format!("{}/token", self.issuer())
    }

    pub fn port(&self) -> u16 {
        self.fx.port()
    }

    pub fn requests(&self) -> Vec<Request> {
        self.fx.requests()
    }

    pub fn summary(&self) -> String {
        self.fx.summary()
    }

    /// The GETs of the authorization endpoint.
    pub fn authorize_requests(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "GET" && r.path.starts_with("/auth"))
            .collect()
    }

    /// Every request to a token endpoint (`/token`, `/token2`).
    pub fn token_requests(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.starts_with("/token"))
            .collect()
    }

    /// The requests for metadata.
    pub fn metadata_requests(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.starts_with("/.well-known/"))
            .collect()
    }
}

/// The query of a request target, decoded.
pub fn query(target: &str) -> Vec<(String, String)> {
    form_decode(target.split_once('?').map_or("", |(_, q)| q))
}

/// The value of `name` in decoded pairs; panics if it is not there
/// exactly once.
#[track_caller]
pub fn param<'a>(pairs: &'a [(String, String)], name: &str) -> &'a str {
    let v: Vec<&str> = pairs
        .iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(v.len(), 1, "parameter {name} exactly once in {pairs:?}");
    v[0]
}

/// Decodes `application/x-www-form-urlencoded`.
pub fn form_decode(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (pct_decode(k), pct_decode(v))
        })
        .collect()
}

fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let h = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(h, 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn pct_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The S256 code challenge of a verifier (RFC 7636 §4.2).
pub fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

fn handle_as(opts: &AsOptions, base: &str, req: &Request, conn: &mut Conn) {
    let path = req.path.split('?').next().unwrap_or("");
    match (req.method.as_str(), path) {
        ("GET", "/.well-known/oauth-authorization-server") => {
            let mut m = json!({
                "issuer": opts.issuer.clone().unwrap_or(base.to_string()),
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code"],
                "code_challenge_methods_supported":
                    if opts.s256 { json!(["S256"]) } else { json!(["plain"]) },
                "scopes_supported": ["mcp:tools", "offline_access"],
            });
            if let Some(methods) = &opts.auth_methods {
                m["token_endpoint_auth_methods_supported"] = json!(methods);
            }
            if opts.iss_supported {
                m["authorization_response_iss_parameter_supported"] =
                    json!(true);
            }
            conn.json(200, &[], &m);
        }
        ("GET", p) if p.starts_with("/auth") => {
            let q = query(&req.path);
            let get = |k: &str| {
                q.iter().find(|(n, _)| n == k).map_or("", |(_, v)| v.as_str())
            };
            let state = pct_encode(get("state"));
            let mut loc = format!("{}?", get("redirect_uri"));
            match &opts.deny {
                Some(desc) => loc.push_str(&format!(
                    "error=access_denied&error_description={}&state={state}",
                    pct_encode(desc)
                )),
                None => loc.push_str(&format!(
                    "code={}&state={state}",
                    pct_encode(&opts.code)
                )),
            }
            match opts.iss {
                Iss::Omit => {}
                Iss::Right => loc.push_str(&format!(
                    "&iss={}",
                    pct_encode(opts.issuer.as_deref().unwrap_or(base))
                )),
                Iss::Wrong => loc.push_str("&iss=https%3A%2F%2Fevil.example"),
            }
            conn.redirect(302, &loc);
        }
        ("POST", "/token") => token(opts, req, conn),
        _ => conn.respond(404, &[("content-type", "text/plain")], b"no"),
    }
}

/// The token endpoint: checks the request against the authorization
/// request before it (code, redirect URI, PKCE, client), answers 400
/// `invalid_grant` naming the first problem.
fn token(opts: &AsOptions, req: &Request, conn: &mut Conn) {
    let f = form_decode(&req.body);
    let get =
        |k: &str| f.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let auth = conn
        .requests()
        .into_iter()
        .rfind(|r| r.method == "GET" && r.path.starts_with("/auth"));
    let aq = auth.map(|r| query(&r.path)).unwrap_or_default();
    let aget =
        |k: &str| aq.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let basic = req.header("authorization").and_then(|h| {
        let b = h.strip_prefix("Basic ")?;
        let raw = base64::engine::general_purpose::STANDARD.decode(b).ok()?;
        let raw = String::from_utf8(raw).ok()?;
        let (id, secret) = raw.split_once(':')?;
        Some((pct_decode(id), pct_decode(secret)))
    });
    let secret_ok = match &opts.client_secret {
        None => true,
        Some(s) => {
            basic.as_ref().is_some_and(|(_, b)| b == s)
                || get("client_secret") == Some(s.as_str())
        }
    };
    let problem = if req.header("content-type")
        != Some("application/x-www-form-urlencoded")
    {
        Some("not a form")
    } else if get("grant_type") != Some("authorization_code") {
        Some("grant_type")
    } else if get("code") != Some(opts.code.as_str()) {
        Some("code")
    } else if get("redirect_uri").is_none()
        || get("redirect_uri") != aget("redirect_uri")
    {
        Some("redirect_uri")
    } else if get("code_verifier").map(s256).as_deref()
        != aget("code_challenge")
    {
        Some("code_verifier does not match the code_challenge")
    } else if get("client_id")
        .or(basic.as_ref().map(|(id, _)| id.as_str()))
        .is_none_or(|id| Some(id) != aget("client_id"))
        || basic
            .as_ref()
            .is_some_and(|(id, _)| Some(id.as_str()) != aget("client_id"))
    {
        Some("client_id")
    } else if !secret_ok {
        Some("client authentication")
    } else {
        None
    };
    if let Some(p) = problem {
        conn.json(
            400,
            &[],
            &json!({"error": "invalid_grant", "error_description": p}),
        );
        return;
    }
    match opts.token_answer {
        TokenAnswer::Json => {
            let mut m = json!({
                "access_token": opts.access_token,
                "token_type": "Bearer",
            });
            if let Some(r) = &opts.refresh_token {
                m["refresh_token"] = json!(r);
            }
            if let Some(e) = opts.expires_in {
                m["expires_in"] = json!(e);
            }
            if let Some(s) = &opts.scope {
                m["scope"] = json!(s);
            }
            conn.json(200, &[("cache-control", "no-store")], &m);
        }
        TokenAnswer::Html => conn.respond(
            200,
            &[("content-type", "text/html")],
            b"<html><body>Sign in</body></html>",
        ),
        TokenAnswer::Mac => conn.json(
            200,
            &[],
            &json!({"access_token": opts.access_token, "token_type": "mac",
                    "mac_key": "k", "mac_algorithm": "hmac-sha-256"}),
        ),
        TokenAnswer::Redirect => {
            let host = req.header("host").unwrap_or("");
            conn.redirect(302, &format!("http://{host}/token2"));
        }
    }
}

/// An MCP server ([`McpScript`] at `/mcp`, and at `/mcp2` for a test that
/// moves the server) that wants `Authorization: Bearer TOKEN` and
/// otherwise answers 401 with a `resource_metadata` challenge; its
/// protected-resource metadata names `issuer`.
#[derive(Debug)]
pub struct ProtectedMcp {
    fx: HttpFixture,
}

impl ProtectedMcp {
    /// `resource`: the `resource` of the metadata when it is not the
    /// server's own URL.
    pub fn start(
        token: &str,
        issuer: &str,
        resource: Option<&str>,
    ) -> ProtectedMcp {
        let base: Arc<OnceLock<String>> = Arc::new(OnceLock::new());
        let b = base.clone();
        let script = McpScript::new();
        let want = format!("Bearer {token}");
        let issuer = issuer.to_string();
        let resource = resource.map(str::to_string);
        let fx = HttpFixture::start(move |req, conn| {
            let base = b.get().expect("base set after start");
            let prm =
                format!("{base}/.well-known/oauth-protected-resource/mcp");
            if req.method == "GET" && req.path == prm[base.len()..] {
                let doc = json!({
                    "resource": resource.clone()
                        .unwrap_or(format!("{base}/mcp")),
                    "authorization_servers": [issuer],
                    "scopes_supported": ["mcp:tools"],
                    "bearer_methods_supported": ["header"],
                });
                conn.json(200, &[], &doc);
                return;
            }
            if req.path != "/mcp" && req.path != "/mcp2" {
                conn.respond(404, &[("content-type", "text/plain")], b"no");
                return;
            }
            if req.header("authorization") != Some(want.as_str()) {
                let challenge = format!("Bearer resource_metadata=\"{prm}\"");
                conn.respond(
                    401,
                    &[
                        ("www-authenticate", challenge.as_str()),
                        ("content-type", "text/plain"),
                    ],
                    b"log in first",
                );
                return;
            }
            let mut r = req.clone();
            r.path = "/mcp".into();
            script.handle(&r, conn);
        });
        base.set(format!("http://127.0.0.1:{}", fx.port())).expect("once");
        ProtectedMcp { fx }
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        self.fx.url()
    }

    pub fn port(&self) -> u16 {
        self.fx.port()
    }

    /// Where its protected-resource metadata is.
    pub fn prm_url(&self) -> String {
        format!(
            "http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp",
            self.fx.port()
        )
    }

    pub fn requests(&self) -> Vec<Request> {
        self.fx.requests()
    }

    pub fn summary(&self) -> String {
        self.fx.summary()
    }
}

/// A browser step before the real callback: the callback with a tampered
/// `state` (logged as `tampered STATUS`).
pub const TAMPERED_STATE: &str = "bad=$(printf '%s' \"$loc\" | sed \
    's/state=[^&]*/state=tampered/')\n\
    echo \"tampered $(c -w '%{http_code}' \"$bad\")\" >> \"$d/browser.log\"\n";

/// A favicon GET on the callback port (`favicon STATUS`).
pub const FAVICON: &str = "echo \"favicon $(c -w '%{http_code}' \
    \"http://$hostport/favicon.ico\")\" >> \"$d/browser.log\"\n";

/// A POST to the callback URL (`post STATUS`).
pub const POST: &str = "echo \"post $(c -w '%{http_code}' -X POST \
    --data x \"$loc\")\" >> \"$d/browser.log\"\n";

/// The callback with `Host: localhost:PORT` (`host STATUS`).
pub const WRONG_HOST: &str = "echo \"host $(c -w '%{http_code}' -H \
    \"Host: localhost:${hostport#*:}\" \"$loc\")\" >> \"$d/browser.log\"\n";

/// Writes `browser.sh` into `dir`: records argv[1] in `browser-url.txt`,
/// GETs it without following the redirect, records the `Location` in
/// `browser-location.txt`, runs `before` (see [`TAMPERED_STATE`] and
/// friends; `$loc`, `$hostport`, `$d` and the `c` function are there),
/// then GETs the `Location` and logs `callback STATUS` and `done` in
/// `browser.log`. Returns its path.
pub fn write_browser(dir: &Dir, before: &str) -> PathBuf {
    let d = dir.root().display().to_string();
    assert!(!d.contains('\''), "{d}");
    let script = format!(
        "#!/bin/sh\n\
         d='{d}'\n\
         printf '%s\\n' \"$1\" > \"$d/browser-url.txt\"\n\
         c() {{ curl -gsS --noproxy '*' --max-time 10 -o /dev/null \"$@\"; }}\n\
         loc=$(c -w '%{{redirect_url}}' \"$1\")\n\
         printf '%s\\n' \"$loc\" > \"$d/browser-location.txt\"\n\
         hostport=${{loc#http://}}\n\
         hostport=${{hostport%%/*}}\n\
         {before}\
         echo \"callback $(c -w '%{{http_code}}' \"$loc\")\" >> \
         \"$d/browser.log\"\n\
         echo done >> \"$d/browser.log\"\n"
    );
    write_script(dir, "browser.sh", &script)
}

/// A browser that records its argv[1] (in `browser-url.txt`) and does
/// nothing else.
pub fn write_idle_browser(dir: &Dir) -> PathBuf {
    let d = dir.root().display().to_string();
    write_script(
        dir,
        "browser.sh",
        &format!("#!/bin/sh\nprintf '%s\\n' \"$1\" > '{d}/browser-url.txt'\n"),
    )
}

/// Writes an executable file.
pub fn write_script(dir: &Dir, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.write(name, text);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    p
}

/// The URL the browser was started with, if it was.
pub fn browser_url(dir: &Dir) -> Option<String> {
    std::fs::read_to_string(dir.path("browser-url.txt"))
        .ok()
        .map(|s| s.trim_end_matches('\n').to_string())
}

/// Waits (up to 10 s) until the browser has logged `done` and returns
/// its log lines before that.
#[track_caller]
pub fn browser_log(dir: &Dir) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(dir.path("browser.log"))
            .unwrap_or_default();
        if text.lines().any(|l| l == "done") {
            return text
                .lines()
                .take_while(|l| *l != "done")
                .map(str::to_string)
                .collect();
        }
        assert!(Instant::now() < end, "the browser did not finish: {text:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits up to `limit` for `pred`; whether it came true.
pub fn wait_until(limit: Duration, pred: impl Fn() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if pred() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The parsed JSON of a file.
#[track_caller]
pub fn read_json(p: &std::path::Path) -> Value {
    let t = std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&t)
        .unwrap_or_else(|e| panic!("{}: {e}\n{t}", p.display()))
}
