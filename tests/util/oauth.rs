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
//!
//! [`OAuthSite`] is the configurable site of the opt-in paths
//! (tests/auth_paths.rs). Both test modules run `rivumi-mcp` through
//! [`web_command`] against one server `web` written by [`config`].

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::http::{Conn, HttpFixture, McpScript, Request};
use super::{Dir, Output, TestCommand, write_mcp_json};

// ---------------------------------------------------------------------------
// The commands of the OAuth tests (tests/login.rs, tests/auth_paths.rs)
// ---------------------------------------------------------------------------

/// What `list web` prints for the script's one tool.
pub const LIST_OUT: &str = "web: http-fixture 1.0 (protocol 2025-11-25)\n  \
                            mcp__web__echo  read  Echoes its text\n      \
                            (text: string)\n";

/// A deadline for every command.
const LIMIT: Duration = Duration::from_secs(30);

/// The client id the tests configure.
pub const CLIENT: &str = "rivumi-test";

/// The credential file (`RIVUMI_MCP_CREDENTIALS`) of [`web_command`].
pub fn creds(dir: &Dir) -> PathBuf {
    dir.path("store/credentials.json")
}

/// `rivumi-mcp ARGS` with `web` allowed, the test browser (`browser.sh`,
/// see [`write_browser`]) and the credential file ([`creds`]) in the Dir.
pub fn web_command(dir: &Dir, args: &[&str]) -> TestCommand {
    let mut c = dir.command(args);
    c.env("RIVUMI_MCP_ALLOWLIST", "web")
        .env("RIVUMI_MCP_BROWSER", dir.path("browser.sh"))
        .env("RIVUMI_MCP_CREDENTIALS", creds(dir))
        .timeout(LIMIT);
    c
}

/// The arguments of `login web` with a callback deadline that fails fast.
pub const LOGIN_ARGS: &[&str] = &["login", "web", "--timeout", "15"];

/// Writes `.mcp.json` with server `web` at `url` and this `oauth` block.
pub fn config(dir: &Dir, url: &str, oauth: Value) {
    write_mcp_json(dir, &[("web", json!({"url": url, "oauth": oauth}))]);
}

/// What `login` writes on stderr for an authorization URL.
pub fn open_this(url: &str) -> String {
    format!(
        "rivumi-mcp: to log in to 'web', open this URL in a browser:\n\n  \
         {url}\n\n"
    )
}

/// The last line of stderr: the single `rivumi-mcp: ...` error line (after
/// the URL banner, if there is one).
#[track_caller]
pub fn last_line(out: &Output) -> String {
    out.stderr.lines().last().unwrap_or("").to_string()
}

/// Makes the stored token of `web` expired (a minute ago), in the file
/// (its mode and link count unchanged).
pub fn expire_stored_token(dir: &Dir) {
    let p = creds(dir);
    let mut v = read_json(&p);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    v["servers"]["web"]["expires_at"] = json!(now - 60);
    std::fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

/// What the `iss` parameter of the authorization response is (RFC 9207).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Iss {
    /// No `iss`.
    Omit,
    /// The issuer, as in the metadata.
    Right,
    /// Another issuer.
    Wrong,
    /// The issuer with a `/` appended: the same URL once normalized, but
    /// not the same string (RFC 9207 compares strings).
    Slash,
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
    pub expires_in: Option<i64>,
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
        let fx = start_with_base(move |base, req, conn| {
            handle_as(&opts, base, req, conn);
        });
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
        requests_under(&self.fx, Some("GET"), "/auth")
    }

    /// Every request to a token endpoint (`/token`, `/token2`).
    pub fn token_requests(&self) -> Vec<Request> {
        requests_under(&self.fx, None, "/token")
    }

    /// The requests for metadata.
    pub fn metadata_requests(&self) -> Vec<Request> {
        requests_under(&self.fx, None, "/.well-known/")
    }
}

/// An [`HttpFixture`] whose `handler` is also given its base URL,
/// `http://127.0.0.1:PORT` (known only once it listens).
fn start_with_base<F>(handler: F) -> HttpFixture
where
    F: Fn(&str, &Request, &mut Conn) + Send + Sync + 'static,
{
    let base: Arc<OnceLock<String>> = Arc::new(OnceLock::new());
    let b = base.clone();
    let fx = HttpFixture::start(move |req, conn| {
        let base = b.get().expect("base set after start");
        handler(base, req, conn);
    });
    base.set(format!("http://127.0.0.1:{}", fx.port())).expect("once");
    fx
}

/// The requests `fx` received (with `method`, if given) whose path starts
/// with `prefix`, in order.
fn requests_under(
    fx: &HttpFixture,
    method: Option<&str>,
    prefix: &str,
) -> Vec<Request> {
    fx.requests()
        .into_iter()
        .filter(|r| {
            method.is_none_or(|m| r.method == m) && r.path.starts_with(prefix)
        })
        .collect()
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
                Iss::Slash => loc.push_str(&format!(
                    "&iss={}%2F",
                    pct_encode(opts.issuer.as_deref().unwrap_or(base))
                )),
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
        let script = McpScript::new();
        let want = format!("Bearer {token}");
        let issuer = issuer.to_string();
        let resource = resource.map(str::to_string);
        let fx = start_with_base(move |base, req, conn| {
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

// ---------------------------------------------------------------------------
// A configurable site for the opt-in authorization paths
// (tests/auth_paths.rs)
// ---------------------------------------------------------------------------

/// Where an [`OAuthSite`] in the MCP role publishes its protected-resource
/// metadata (RFC 9728).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrmAt {
    /// Nowhere: every well-known URL is 404.
    Nowhere,
    /// At [`HINTED_PRM_PATH`], named by the 401's `resource_metadata`
    /// (and by a 403's).
    Hinted,
    /// At `/.well-known/oauth-protected-resource/mcp`; the 401 names no
    /// metadata.
    PathSuffixed,
    /// At `/.well-known/oauth-protected-resource`; the 401 names no
    /// metadata.
    Root,
}

/// Where [`PrmAt::Hinted`] metadata lives: not a well-known URL, so a
/// fetch of it can only come from the challenge.
pub const HINTED_PRM_PATH: &str = "/meta/prm.json";

/// The access tokens an authorization server issued, with their scopes;
/// shared with the MCP servers that accept them.
#[derive(Debug, Clone, Default)]
pub struct Ledger(Arc<std::sync::Mutex<Vec<(String, String)>>>);

impl Ledger {
    /// Records `token` as issued with `scope`: the MCP servers accept it.
    pub fn issue(&self, token: &str, scope: &str) {
        self.0.lock().unwrap().push((token.to_string(), scope.to_string()));
    }

    /// Makes `token` unknown from now on: the MCP servers answer it with
    /// 401 `invalid_token` (a token revoked or expired early).
    pub fn revoke(&self, token: &str) {
        self.0.lock().unwrap().retain(|(t, _)| t != token);
    }

    /// The scope a token was issued with, if it was issued.
    pub fn scope_of(&self, token: &str) -> Option<String> {
        let l = self.0.lock().unwrap();
        l.iter().find(|(t, _)| t == token).map(|(_, s)| s.clone())
    }
}

/// The behaviour of an [`OAuthSite`]: an authorization server, an MCP
/// server, or both on one origin (MCP 2025-03-26).
#[derive(Debug, Clone)]
pub struct SiteOptions {
    // --- The authorization server role -----------------------------------
    /// Serves `/authorize`, `/token` and `/register`.
    pub authorization_server: bool,
    /// Serves RFC 8414 metadata at `/.well-known/oauth-authorization-server`.
    pub as_metadata: bool,
    /// The metadata's `issuer` when it is not the site's own origin.
    pub metadata_issuer: Option<String>,
    /// Lists S256 in `code_challenge_methods_supported` (else `plain`).
    pub s256: bool,
    /// `token_endpoint_auth_methods_supported` (absent when `None`); when
    /// given, the token endpoint refuses any other client authentication.
    pub auth_methods: Option<Vec<String>>,
    /// `scopes_supported` of the metadata (absent when empty).
    pub as_scopes: Vec<String>,
    /// Advertises `registration_endpoint` (`/register` is served anyway).
    pub registration: bool,
    /// `client_id_metadata_document_supported: true`.
    pub cimd: bool,
    /// Confidential clients (id, secret) the token endpoint authenticates.
    pub clients: Vec<(String, String)>,
    /// How the ids of clients it registers start (`dyn-1`, `dyn-2`, ...);
    /// the secrets are `{prefix}secret-N`.
    pub client_prefix: String,
    /// Issues refresh tokens with authorization-code and refresh grants.
    pub refresh_tokens: bool,
    /// A refresh token is good once: a reused one gets 400 `invalid_grant`.
    pub strict_rotation: bool,
    /// How long the token endpoint takes to answer.
    pub token_delay: Duration,
    pub expires_in: Option<i64>,
    // --- The MCP server role ---------------------------------------------
    /// Serves [`McpScript`] at `/mcp` behind a bearer check against the
    /// ledger.
    pub mcp: bool,
    pub prm: PrmAt,
    /// The metadata's `resource` when it is not the site's `/mcp`;
    /// `{base}` in it stands for the site's origin.
    pub prm_resource: Option<String>,
    /// The metadata's authorization server when it is not the site itself.
    pub prm_authorization_server: Option<String>,
    /// The 401's `resource_metadata` when it is not the site's own
    /// hinted metadata (with [`PrmAt::Hinted`]).
    pub prm_hint: Option<String>,
    /// The metadata's `scopes_supported` (absent when empty).
    pub prm_scopes: Vec<String>,
    /// The `scope` of the 401 challenge.
    pub challenge_scope: Option<String>,
    /// `tools/call` needs a token with all of these scopes; otherwise 403
    /// `insufficient_scope` with `scope` naming them.
    pub call_scopes: Vec<String>,
    /// Answers 401 to every request, whatever token it carries.
    pub refuse_all: bool,
    /// The ledger to check tokens against (another site's); the site's own
    /// when `None`.
    pub ledger: Option<Ledger>,
    /// Serves a device authorization endpoint (RFC 8628) at `/device`,
    /// published in the metadata, answering polls as scripted.
    pub device: Option<DeviceScript>,
}

/// How the device grant of an [`OAuthSite`] goes.
#[derive(Debug, Clone)]
pub struct DeviceScript {
    /// The error codes of the first polls (`authorization_pending`,
    /// `slow_down`), in order.
    pub before: Vec<&'static str>,
    /// The answer after them: `None` for the tokens (after checking the
    /// PKCE verifier), else this error code (`access_denied`,
    /// `expired_token`).
    pub outcome: Option<&'static str>,
    /// The `verification_uri`, when not `{base}/device-page`.
    pub verification_uri: Option<String>,
    /// Sends `verification_uri_complete` too.
    pub complete: bool,
    pub interval: u64,
    pub expires_in: u64,
}

impl Default for DeviceScript {
    fn default() -> DeviceScript {
        DeviceScript {
            before: vec![],
            outcome: None,
            verification_uri: None,
            complete: false,
            interval: 1,
            expires_in: 60,
        }
    }
}

/// The user code the site hands out.
pub const USER_CODE: &str = "WDJB-MJHT";

impl Default for SiteOptions {
    fn default() -> SiteOptions {
        SiteOptions {
            authorization_server: false,
            as_metadata: true,
            metadata_issuer: None,
            s256: true,
            auth_methods: None,
            as_scopes: vec!["mcp:tools".into(), "offline_access".into()],
            registration: false,
            cimd: false,
            clients: vec![],
            client_prefix: "dyn-".into(),
            refresh_tokens: false,
            strict_rotation: false,
            token_delay: Duration::ZERO,
            expires_in: None,
            mcp: false,
            prm: PrmAt::Hinted,
            prm_resource: None,
            prm_authorization_server: None,
            prm_hint: None,
            prm_scopes: vec!["mcp:tools".into()],
            challenge_scope: None,
            call_scopes: vec![],
            refuse_all: false,
            ledger: None,
            device: None,
        }
    }
}

impl SiteOptions {
    /// An authorization server with metadata.
    pub fn auth_server() -> SiteOptions {
        SiteOptions { authorization_server: true, ..SiteOptions::default() }
    }

    /// An MCP server whose hinted metadata names `auth` and which accepts
    /// the tokens `auth` issues.
    pub fn mcp_for(auth: &OAuthSite) -> SiteOptions {
        SiteOptions {
            mcp: true,
            prm_authorization_server: Some(auth.issuer()),
            ledger: Some(auth.ledger()),
            ..SiteOptions::default()
        }
    }
}

/// One authorization request as the site granted it.
#[derive(Debug, Clone)]
struct Grant {
    code: String,
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scope: String,
    used: bool,
}

/// One device authorization as the site granted it.
#[derive(Debug, Clone)]
struct DeviceGrant {
    code: String,
    client_id: String,
    challenge: String,
    scope: String,
    polls: usize,
}

#[derive(Debug, Default)]
struct SiteState {
    devices: Vec<DeviceGrant>,
    codes: usize,
    access: usize,
    grants: Vec<Grant>,
    /// (refresh token, client id, scope, still good), in issue order.
    refresh: Vec<(String, String, String, bool)>,
    /// (client id, secret, token_endpoint_auth_method).
    registered: Vec<(String, Option<String>, String)>,
    /// The authorization server the resource metadata names from now on
    /// (see [`OAuthSite::point_at`]).
    prm_authorization_server: Option<String>,
    /// The ledger the MCP server checks tokens against from now on (see
    /// [`OAuthSite::trust`]).
    ledger: Option<Ledger>,
}

/// The scripted site; see [`SiteOptions`].
#[derive(Debug)]
pub struct OAuthSite {
    fx: HttpFixture,
    ledger: Ledger,
    state: Arc<std::sync::Mutex<SiteState>>,
}

impl OAuthSite {
    pub fn start(opts: SiteOptions) -> OAuthSite {
        let ledger = opts.ledger.clone().unwrap_or_default();
        let state = Arc::new(std::sync::Mutex::new(SiteState::default()));
        let (l, st) = (ledger.clone(), state.clone());
        let script = McpScript::new();
        let fx = start_with_base(move |base, req, conn| {
            let site = Site { opts: &opts, base, ledger: &l, state: &st };
            site.handle(&script, req, conn);
        });
        OAuthSite { fx, ledger, state }
    }

    /// `http://127.0.0.1:PORT`: the issuer of its metadata (by default).
    pub fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.fx.port())
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        self.fx.url()
    }

    pub fn port(&self) -> u16 {
        self.fx.port()
    }

    pub fn ledger(&self) -> Ledger {
        self.ledger.clone()
    }

    pub fn requests(&self) -> Vec<Request> {
        self.fx.requests()
    }

    pub fn summary(&self) -> String {
        self.fx.summary()
    }

    /// `METHOD path` of every request, in order.
    pub fn lines(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect()
    }

    /// The GETs of `/authorize`.
    pub fn authorize_requests(&self) -> Vec<Request> {
        requests_under(&self.fx, Some("GET"), "/authorize")
    }

    /// The POSTs to `/token`.
    pub fn token_requests(&self) -> Vec<Request> {
        requests_under(&self.fx, None, "/token")
    }

    /// The requests to `/register`.
    pub fn register_requests(&self) -> Vec<Request> {
        requests_under(&self.fx, None, "/register")
    }

    /// The POSTs to `/mcp`.
    pub fn mcp_requests(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path == "/mcp")
            .collect()
    }

    /// Every refresh token issued, in order.
    pub fn refresh_tokens(&self) -> Vec<String> {
        let st = self.state.lock().unwrap();
        st.refresh.iter().map(|r| r.0.clone()).collect()
    }

    /// Makes the protected-resource metadata name `issuer` as its
    /// authorization server from now on.
    pub fn point_at(&self, issuer: &str) {
        self.state.lock().unwrap().prm_authorization_server =
            Some(issuer.to_string());
    }

    /// Makes the MCP server accept only the tokens in `ledger` from now
    /// on: with [`OAuthSite::point_at`], an authorization server
    /// migration (tokens of the old one get 401).
    pub fn trust(&self, ledger: Ledger) {
        self.state.lock().unwrap().ledger = Some(ledger);
    }

    /// Every access token issued, in order.
    pub fn access_tokens(&self) -> Vec<String> {
        self.ledger.0.lock().unwrap().iter().map(|t| t.0.clone()).collect()
    }
}

struct Site<'a> {
    opts: &'a SiteOptions,
    base: &'a str,
    ledger: &'a Ledger,
    state: &'a std::sync::Mutex<SiteState>,
}

impl Site<'_> {
    fn handle(&self, script: &McpScript, req: &Request, conn: &mut Conn) {
        let o = self.opts;
        let path = req.path.split('?').next().unwrap_or("");
        let m = req.method.as_str();
        if o.authorization_server {
            match (m, path) {
                ("GET", "/.well-known/oauth-authorization-server")
                    if o.as_metadata =>
                {
                    return self.metadata(conn);
                }
                ("GET", "/authorize") => return self.authorize(req, conn),
                ("POST", "/token") => return self.token(req, conn),
                ("POST", "/register") => return self.register(req, conn),
                ("POST", "/device") if o.device.is_some() => {
                    return self.device(req, conn);
                }
                _ => {}
            }
        }
        if o.mcp {
            let prm_path = match o.prm {
                PrmAt::Nowhere => None,
                PrmAt::Hinted => Some(HINTED_PRM_PATH),
                PrmAt::PathSuffixed => {
                    Some("/.well-known/oauth-protected-resource/mcp")
                }
                PrmAt::Root => Some("/.well-known/oauth-protected-resource"),
            };
            if m == "GET" && Some(path) == prm_path {
                let mut doc = json!({
                    "resource": o.prm_resource.as_ref()
                        .map(|r| r.replace("{base}", self.base))
                        .unwrap_or(format!("{}/mcp", self.base)),
                    "authorization_servers": [self.state.lock().unwrap()
                        .prm_authorization_server.clone()
                        .or(o.prm_authorization_server.clone())
                        .unwrap_or(self.base.to_string())],
                    "bearer_methods_supported": ["header"],
                });
                if !o.prm_scopes.is_empty() {
                    doc["scopes_supported"] = json!(o.prm_scopes);
                }
                return conn.json(200, &[], &doc);
            }
            if path == "/mcp" {
                return self.mcp(script, req, conn);
            }
        }
        conn.respond(404, &[("content-type", "text/plain")], b"no");
    }

    fn metadata(&self, conn: &mut Conn) {
        let o = self.opts;
        let base = self.base;
        let mut m = json!({
            "issuer": o.metadata_issuer.clone().unwrap_or(base.to_string()),
            "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": format!("{base}/token"),
            "response_types_supported": ["code"],
            "grant_types_supported":
                ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported":
                if o.s256 { json!(["S256"]) } else { json!(["plain"]) },
        });
        if !o.as_scopes.is_empty() {
            m["scopes_supported"] = json!(o.as_scopes);
        }
        if let Some(methods) = &o.auth_methods {
            m["token_endpoint_auth_methods_supported"] = json!(methods);
        }
        if o.registration {
            m["registration_endpoint"] = json!(format!("{base}/register"));
        }
        if o.cimd {
            m["client_id_metadata_document_supported"] = json!(true);
        }
        if o.device.is_some() {
            m["device_authorization_endpoint"] =
                json!(format!("{base}/device"));
        }
        conn.json(200, &[], &m);
    }

    /// RFC 8628 §3.2: a device code for an authenticated client.
    fn device(&self, req: &Request, conn: &mut Conn) {
        let script = self.opts.device.as_ref().expect("a device script");
        let f = form_decode(&req.body);
        let get = |k: &str| param(&f, k).to_string();
        let client_id = match self.client(req, &f) {
            Ok((id, _)) => id,
            Err((status, error, desc)) => {
                return conn.json(
                    status,
                    &[],
                    &json!({"error": error, "error_description": desc}),
                );
            }
        };
        let mut st = self.state.lock().unwrap();
        let code = format!("dc-{}", st.devices.len() + 1);
        st.devices.push(DeviceGrant {
            code: code.clone(),
            client_id,
            challenge: get("code_challenge"),
            scope: get("scope"),
            polls: 0,
        });
        drop(st);
        let uri = script
            .verification_uri
            .clone()
            .unwrap_or(format!("{}/device-page", self.base));
        let mut v = json!({
            "device_code": code,
            "user_code": USER_CODE,
            "verification_uri": uri,
            "expires_in": script.expires_in,
            "interval": script.interval,
        });
        if script.complete {
            v["verification_uri_complete"] =
                json!(format!("{uri}?user_code={USER_CODE}"));
        }
        conn.json(200, &[("cache-control", "no-store")], &v);
    }

    /// Grants at once: a 302 to the `redirect_uri` with a fresh code.
    fn authorize(&self, req: &Request, conn: &mut Conn) {
        let q = query(&req.path);
        let get = |k: &str| {
            q.iter().find(|(n, _)| n == k).map_or("", |(_, v)| v.as_str())
        };
        let redirect_uri = get("redirect_uri").to_string();
        let state = pct_encode(get("state"));
        let client_id = get("client_id").to_string();
        let unknown_dynamic = client_id
            .starts_with(self.opts.client_prefix.as_str())
            && !self
                .state
                .lock()
                .unwrap()
                .registered
                .iter()
                .any(|r| r.0 == client_id);
        if get("response_type") != "code"
            || get("code_challenge_method") != "S256"
            || unknown_dynamic
        {
            return conn.redirect(
                302,
                &format!("{redirect_uri}?error=invalid_request&state={state}"),
            );
        }
        let code = {
            let mut st = self.state.lock().unwrap();
            st.codes += 1;
            let code = format!("code-{}", st.codes);
            st.grants.push(Grant {
                code: code.clone(),
                client_id,
                redirect_uri: redirect_uri.clone(),
                challenge: get("code_challenge").to_string(),
                scope: get("scope").to_string(),
                used: false,
            });
            code
        };
        conn.redirect(
            302,
            &format!("{redirect_uri}?code={code}&state={state}"),
        );
    }

    /// RFC 7591: registers whatever is asked, echoing the metadata, with a
    /// secret unless the method is `none`.
    fn register(&self, req: &Request, conn: &mut Conn) {
        let body = req.json();
        if !body.is_object() {
            return conn.json(
                400,
                &[],
                &json!({"error": "invalid_client_metadata"}),
            );
        }
        let method = body
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .unwrap_or("client_secret_basic")
            .to_string();
        let mut st = self.state.lock().unwrap();
        let n = st.registered.len() + 1;
        let prefix = &self.opts.client_prefix;
        let id = format!("{prefix}{n}");
        let secret = (method != "none").then(|| format!("{prefix}secret-{n}"));
        st.registered.push((id.clone(), secret.clone(), method.clone()));
        drop(st);
        let mut answer = body;
        answer["client_id"] = json!(id);
        answer["client_id_issued_at"] = json!(1_700_000_000u64);
        answer["token_endpoint_auth_method"] = json!(method);
        if let Some(s) = secret {
            answer["client_secret"] = json!(s);
            answer["client_secret_expires_at"] = json!(0);
        }
        conn.json(201, &[], &answer);
    }

    fn token(&self, req: &Request, conn: &mut Conn) {
        conn.sleep(self.opts.token_delay);
        match self.token_answer(req) {
            Ok(v) => conn.json(200, &[("cache-control", "no-store")], &v),
            Err((status, error, desc)) => conn.json(
                status,
                &[],
                &json!({"error": error, "error_description": desc}),
            ),
        }
    }

    /// Authenticates the client: (client id, whether it proved a secret).
    fn client(
        &self,
        req: &Request,
        f: &[(String, String)],
    ) -> Result<(String, bool), (u16, &'static str, String)> {
        let bad = |d: &str| Err((401, "invalid_client", d.to_string()));
        let get =
            |k: &str| f.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let basic = req.header("authorization").and_then(|h| {
            let b = h.strip_prefix("Basic ")?;
            let raw =
                base64::engine::general_purpose::STANDARD.decode(b).ok()?;
            let raw = String::from_utf8(raw).ok()?;
            let (id, secret) = raw.split_once(':')?;
            Some((pct_decode(id), pct_decode(secret)))
        });
        let (id, secret, method) = match (&basic, get("client_secret")) {
            (Some(_), Some(_)) => return bad("two client authentications"),
            (Some((id, s)), None) => {
                if get("client_id").is_some_and(|f| f != *id) {
                    return bad("client_id differs from the Basic one");
                }
                (id.clone(), Some(s.clone()), "client_secret_basic")
            }
            (None, Some(s)) => match get("client_id") {
                Some(id) => (id, Some(s), "client_secret_post"),
                None => return bad("client_secret without client_id"),
            },
            (None, None) => match get("client_id") {
                Some(id) => (id, None, "none"),
                None => return bad("no client_id"),
            },
        };
        if let Some(allowed) = &self.opts.auth_methods
            && method != "none"
            && !allowed.iter().any(|m| m == method)
        {
            return bad(&format!("{method} is not supported here"));
        }
        let registered = self
            .state
            .lock()
            .unwrap()
            .registered
            .iter()
            .find(|r| r.0 == id)
            .cloned();
        let want: Option<String> = match &registered {
            Some((_, s, m)) => {
                if method != m {
                    return bad(&format!("registered for {m}, used {method}"));
                }
                s.clone()
            }
            None => self
                .opts
                .clients
                .iter()
                .find(|c| c.0 == id)
                .map(|c| c.1.clone()),
        };
        match (&want, &secret) {
            (Some(w), Some(s)) if w == s => Ok((id, true)),
            (Some(_), _) => bad("wrong or missing client secret"),
            (None, Some(_)) => bad("a public client sent a secret"),
            (None, None) => Ok((id, false)),
        }
    }

    fn token_answer(
        &self,
        req: &Request,
    ) -> Result<Value, (u16, &'static str, String)> {
        let grant_err = |d: &str| Err((400, "invalid_grant", d.to_string()));
        if req.header("content-type")
            != Some("application/x-www-form-urlencoded")
        {
            return Err((400, "invalid_request", "not a form".into()));
        }
        let f = form_decode(&req.body);
        let get =
            |k: &str| f.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        let (client_id, confidential) = self.client(req, &f)?;
        let o = self.opts;
        let mut st = self.state.lock().unwrap();
        let (scope, with_refresh) = match get("grant_type") {
            Some("authorization_code") => {
                let Some(g) = st
                    .grants
                    .iter_mut()
                    .find(|g| Some(g.code.as_str()) == get("code"))
                else {
                    return grant_err("unknown code");
                };
                if g.used {
                    return grant_err("code used before");
                }
                if Some(g.redirect_uri.as_str()) != get("redirect_uri") {
                    return grant_err("redirect_uri");
                }
                if get("code_verifier").map(s256).as_deref()
                    != Some(g.challenge.as_str())
                {
                    return grant_err("code_verifier");
                }
                if g.client_id != client_id {
                    return grant_err("client_id");
                }
                g.used = true;
                (g.scope.clone(), o.refresh_tokens)
            }
            Some("refresh_token") => {
                let Some(r) = st
                    .refresh
                    .iter_mut()
                    .find(|r| Some(r.0.as_str()) == get("refresh_token"))
                else {
                    return grant_err("unknown refresh token");
                };
                if !r.3 {
                    return grant_err("refresh token used before");
                }
                if r.1 != client_id {
                    return grant_err("refresh token of another client");
                }
                if o.strict_rotation {
                    r.3 = false;
                }
                (r.2.clone(), true)
            }
            Some("urn:ietf:params:oauth:grant-type:device_code") => {
                let script = o.device.as_ref().ok_or((
                    400,
                    "unsupported_grant_type",
                    "no device grant here".to_string(),
                ))?;
                let Some(g) = st
                    .devices
                    .iter_mut()
                    .find(|g| Some(g.code.as_str()) == get("device_code"))
                else {
                    return grant_err("unknown device code");
                };
                if g.client_id != client_id {
                    return grant_err("device code of another client");
                }
                g.polls += 1;
                if let Some(e) = script.before.get(g.polls - 1) {
                    return Err((400, *e, "not yet".into()));
                }
                if let Some(e) = script.outcome {
                    return Err((400, e, "as scripted".into()));
                }
                if g.polls > script.before.len() + 1 {
                    return grant_err("device code used before");
                }
                if get("code_verifier").map(s256).as_deref()
                    != Some(g.challenge.as_str())
                {
                    return grant_err("code_verifier");
                }
                (g.scope.clone(), o.refresh_tokens)
            }
            Some("client_credentials") => {
                if !confidential {
                    return Err((
                        401,
                        "invalid_client",
                        "client_credentials needs a confidential client"
                            .into(),
                    ));
                }
                (get("scope").unwrap_or("").to_string(), false)
            }
            _ => {
                return Err((
                    400,
                    "unsupported_grant_type",
                    "grant_type".into(),
                ));
            }
        };
        st.access += 1;
        let access = format!("at-{}", st.access);
        self.ledger.issue(&access, &scope);
        let mut v = json!({"access_token": access, "token_type": "Bearer"});
        if with_refresh {
            let rt = format!("rt-{}", st.refresh.len() + 1);
            st.refresh.push((rt.clone(), client_id, scope.clone(), true));
            v["refresh_token"] = json!(rt);
        }
        if !scope.is_empty() {
            v["scope"] = json!(scope);
        }
        if let Some(e) = o.expires_in {
            v["expires_in"] = json!(e);
        }
        Ok(v)
    }

    /// The bearer check in front of the script.
    fn mcp(&self, script: &McpScript, req: &Request, conn: &mut Conn) {
        let o = self.opts;
        let hint = (o.prm == PrmAt::Hinted).then(|| match &o.prm_hint {
            Some(h) => format!("resource_metadata=\"{h}\""),
            None => {
                format!("resource_metadata=\"{}{HINTED_PRM_PATH}\"", self.base)
            }
        });
        let token = req
            .header("authorization")
            .and_then(|h| h.strip_prefix("Bearer "));
        let trusted = self.state.lock().unwrap().ledger.clone();
        let ledger = trusted.as_ref().unwrap_or(self.ledger);
        let scope = token.and_then(|t| ledger.scope_of(t));
        if o.refuse_all || scope.is_none() {
            let mut params = vec![];
            if token.is_some() {
                params.push("error=\"invalid_token\"".to_string());
            }
            if let Some(s) = &o.challenge_scope {
                params.push(format!("scope=\"{s}\""));
            }
            params.extend(hint);
            let challenge = if params.is_empty() {
                "Bearer".to_string()
            } else {
                format!("Bearer {}", params.join(", "))
            };
            return conn.respond(
                401,
                &[
                    ("www-authenticate", challenge.as_str()),
                    ("content-type", "text/plain"),
                ],
                b"log in first",
            );
        }
        let granted = scope.unwrap_or_default();
        let has = |s: &String| granted.split(' ').any(|g| g == s);
        if req.method == "POST"
            && req.rpc_method().as_deref() == Some("tools/call")
            && !o.call_scopes.iter().all(has)
        {
            let mut params = vec![
                "error=\"insufficient_scope\"".to_string(),
                format!("scope=\"{}\"", o.call_scopes.join(" ")),
            ];
            params.extend(hint);
            let challenge = format!("Bearer {}", params.join(", "));
            return conn.respond(
                403,
                &[
                    ("www-authenticate", challenge.as_str()),
                    ("content-type", "text/plain"),
                ],
                b"more scope needed",
            );
        }
        script.handle(req, conn);
    }
}

// ---------------------------------------------------------------------------
// The machine grants: private_key_jwt, jwt-bearer, token exchange, DPoP
// ---------------------------------------------------------------------------

/// The behaviour of a [`MachineSite`].
#[derive(Debug, Clone, Default)]
pub struct MachineOptions {
    /// `token_endpoint_auth_signing_alg_values_supported`.
    pub signing_algs: Option<Vec<String>>,
    /// `dpop_signing_alg_values_supported`.
    pub dpop_algs: Option<Vec<String>>,
    /// The token endpoint answers `use_dpop_nonce` with this nonce until a
    /// proof carries it.
    pub as_nonce: Option<String>,
    /// The token endpoint asks for a new nonce every time (a loop).
    pub as_nonce_loop: bool,
    /// The MCP endpoint likewise (RFC 9449 §9).
    pub rs_nonce: Option<String>,
    /// The MCP endpoint asks for a new nonce every time (a loop).
    pub rs_nonce_loop: bool,
    /// The token endpoint refuses every request with this OAuth error.
    pub refuse: Option<String>,
    /// The identity provider refuses the token exchange.
    pub idp_refuse: bool,
    /// The token endpoint ignores DPoP proofs and issues Bearer tokens.
    pub ignore_dpop: bool,
    /// Every token answer carries a refresh token `rt-N`.
    pub refresh_tokens: bool,
    /// Publishes and serves a device authorization endpoint (`/device`,
    /// RFC 8628); the token endpoint grants the first poll.
    pub device: bool,
}

/// An authorization server, an identity provider (`/idp/token`) and an MCP
/// server (`/mcp`, with RFC 9728 metadata) on one port, for the machine
/// grants. The token endpoint answers any grant with `at-N` (Bearer) or,
/// for a request with a valid DPoP proof, `dpop-at-N` (DPoP), bound to
/// the proof's key; checking what the client sent is the tests' business.
/// The MCP server takes any `at-` Bearer token, and a `dpop-at-` token only
/// as `DPoP` with a valid proof of the bound key (`ath` included).
#[derive(Debug)]
pub struct MachineSite {
    fx: HttpFixture,
}

/// The checked parts of a DPoP proof, or what is wrong with it.
fn check_proof(
    proof: &str,
    htm: &str,
    htu: &str,
    token: Option<&str>,
) -> Result<(Value, String), String> {
    let parts: Vec<&str> = proof.split('.').collect();
    if parts.len() != 3 {
        return Err("not a compact JWT".into());
    }
    let dec = |s: &str| URL_SAFE_NO_PAD.decode(s).map_err(|e| e.to_string());
    let header: Value =
        serde_json::from_slice(&dec(parts[0])?).map_err(|e| e.to_string())?;
    let claims: Value =
        serde_json::from_slice(&dec(parts[1])?).map_err(|e| e.to_string())?;
    if header["typ"] != "dpop+jwt" || header["alg"] != "ES256" {
        return Err(format!("header {header}"));
    }
    let jwk = &header["jwk"];
    if jwk.get("d").is_some() {
        return Err("private key in the jwk".into());
    }
    if !verify_es256(&format!("{}.{}", parts[0], parts[1]), parts[2], jwk) {
        return Err("signature".into());
    }
    if claims["htm"] != htm
        || claims["htu"] != htu
        || !claims["jti"].is_string()
    {
        return Err(format!("claims {claims}"));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    if (claims["iat"].as_i64().unwrap_or(0) - now).abs() > 60 {
        return Err("iat".into());
    }
    if let Some(t) = token
        && claims["ath"]
            != URL_SAFE_NO_PAD.encode(Sha256::digest(t.as_bytes()))
    {
        return Err("ath".into());
    }
    Ok((claims, jwk_thumbprint(jwk)))
}

/// Verifies an ES256 signature (base64url R || S) over `input` with a
/// P-256 public JWK.
pub fn verify_es256(input: &str, sig: &str, jwk: &Value) -> bool {
    let mut point = vec![4u8];
    for c in ["x", "y"] {
        let Some(b) =
            jwk[c].as_str().and_then(|s| URL_SAFE_NO_PAD.decode(s).ok())
        else {
            return false;
        };
        point.extend(b);
    }
    let Ok(sig) = URL_SAFE_NO_PAD.decode(sig) else { return false };
    ring::signature::UnparsedPublicKey::new(
        &ring::signature::ECDSA_P256_SHA256_FIXED,
        point,
    )
    .verify(input.as_bytes(), &sig)
    .is_ok()
}

/// The RFC 7638 thumbprint of a P-256 JWK.
pub fn jwk_thumbprint(jwk: &Value) -> String {
    let canonical = format!(
        r#"{{"crv":"P-256","kty":"EC","x":{},"y":{}}}"#,
        jwk["x"], jwk["y"]
    );
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// The claims of a compact JWT (not verified).
pub fn jwt_claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).unwrap_or("");
    serde_json::from_slice(
        &URL_SAFE_NO_PAD.decode(payload).unwrap_or_default(),
    )
    .unwrap_or(Value::Null)
}

#[derive(Debug, Default)]
struct MachineState {
    tokens: usize,
    /// The DPoP-bound token and its key's thumbprint.
    bound: Option<(String, String)>,
    rs_nonces: usize,
}

impl MachineSite {
    pub fn start(opts: MachineOptions) -> MachineSite {
        let script = McpScript::new();
        let state = Arc::new(std::sync::Mutex::new(MachineState::default()));
        let fx = start_with_base(move |base, req, conn| {
            let mut st = state.lock().unwrap();
            match (req.method.as_str(), req.path.as_str()) {
                ("GET", "/.well-known/oauth-authorization-server") => {
                    let mut m = json!({
                        "issuer": base,
                        "authorization_endpoint": format!("{base}/authorize"),
                        "token_endpoint": format!("{base}/token"),
                        "response_types_supported": ["code"],
                        "code_challenge_methods_supported": ["S256"],
                        "grant_types_supported": ["client_credentials",
                            "urn:ietf:params:oauth:grant-type:jwt-bearer"],
                        "token_endpoint_auth_methods_supported":
                            ["private_key_jwt", "client_secret_basic", "none"],
                    });
                    if let Some(a) = &opts.signing_algs {
                        m["token_endpoint_auth_signing_alg_values_supported"] =
                            json!(a);
                    }
                    if let Some(a) = &opts.dpop_algs {
                        m["dpop_signing_alg_values_supported"] = json!(a);
                    }
                    if opts.device {
                        m["device_authorization_endpoint"] =
                            json!(format!("{base}/device"));
                    }
                    conn.json(200, &[], &m);
                }
                ("POST", "/device") if opts.device => conn.json(
                    200,
                    &[],
                    &json!({"device_code": "dc-1", "user_code": USER_CODE,
                        "verification_uri": format!("{base}/device-page"),
                        "expires_in": 60, "interval": 1}),
                ),
                ("GET", "/.well-known/oauth-protected-resource/mcp") => conn
                    .json(
                        200,
                        &[],
                        &json!({"resource": format!("{base}/mcp"),
                            "authorization_servers": [base]}),
                    ),
                ("POST", "/idp/token") => {
                    if opts.idp_refuse {
                        conn.json(400, &[], &json!({"error": "invalid_grant",
                            "error_description": "the ID token is not trusted"}));
                    } else {
                        conn.json(200, &[], &json!({"access_token": "id-jag-1",
                            "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                            "token_type": "N_A"}));
                    }
                }
                ("POST", "/token") => {
                    if let Some(e) = &opts.refuse {
                        conn.json(
                            400,
                            &[],
                            &json!({"error": e,
                            "error_description": "refused by the test"}),
                        );
                        return;
                    }
                    st.tokens += 1;
                    let n = st.tokens;
                    let proof =
                        req.header("dpop").filter(|_| !opts.ignore_dpop);
                    let answer = |token: String, kind: &str| {
                        let mut a = json!({"access_token": token,
                            "token_type": kind, "expires_in": 3600});
                        if opts.refresh_tokens {
                            a["refresh_token"] = json!(format!("rt-{n}"));
                        }
                        a
                    };
                    let Some(proof) = proof else {
                        conn.json(
                            200,
                            &[],
                            &answer(format!("at-{n}"), "Bearer"),
                        );
                        return;
                    };
                    let htu = format!("{base}/token");
                    let (claims, jkt) =
                        match check_proof(proof, "POST", &htu, None) {
                            Ok(c) => c,
                            Err(e) => {
                                conn.json(
                                    400,
                                    &[],
                                    &json!({"error": "invalid_dpop_proof",
                                "error_description": e}),
                                );
                                return;
                            }
                        };
                    let want = if opts.as_nonce_loop {
                        Some(format!("as-loop-{n}"))
                    } else {
                        opts.as_nonce.clone()
                    };
                    if let Some(nonce) = &want
                        && claims["nonce"] != json!(nonce)
                    {
                        conn.json(
                            400,
                            &[("dpop-nonce", nonce.as_str())],
                            &json!({"error": "use_dpop_nonce"}),
                        );
                        return;
                    }
                    let token = format!("dpop-at-{n}");
                    st.bound = Some((token.clone(), jkt));
                    conn.json(200, &[], &answer(token, "DPoP"));
                }
                (_, "/mcp") => {
                    let auth = req.header("authorization").unwrap_or("");
                    let prm = format!(
                        "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
                    );
                    let refuse = |conn: &mut Conn, h: &str| {
                        conn.respond(
                            401,
                            &[
                                ("www-authenticate", h),
                                ("content-type", "text/plain"),
                            ],
                            b"no",
                        );
                    };
                    if let Some(t) = auth.strip_prefix("Bearer ")
                        && t.starts_with("at-")
                    {
                        drop(st);
                        return script.handle(req, conn);
                    }
                    let Some(t) = auth.strip_prefix("DPoP ") else {
                        return refuse(conn, &prm);
                    };
                    let bound = st.bound.clone();
                    let htu = format!("{base}/mcp");
                    let proof = req.header("dpop").unwrap_or("");
                    let ok = check_proof(proof, &req.method, &htu, Some(t));
                    let Ok((claims, jkt)) = ok else {
                        return refuse(
                            conn,
                            "DPoP error=\"invalid_dpop_proof\"",
                        );
                    };
                    if bound != Some((t.to_string(), jkt)) {
                        return refuse(conn, "DPoP error=\"invalid_token\"");
                    }
                    let want = if opts.rs_nonce_loop {
                        st.rs_nonces += 1;
                        Some(format!("loop-{}", st.rs_nonces))
                    } else {
                        opts.rs_nonce.clone()
                    };
                    if let Some(nonce) = want
                        && claims["nonce"] != json!(nonce)
                    {
                        conn.respond(
                            401,
                            &[
                                (
                                    "www-authenticate",
                                    "DPoP error=\"use_dpop_nonce\"",
                                ),
                                ("dpop-nonce", nonce.as_str()),
                                ("content-type", "text/plain"),
                            ],
                            b"nonce",
                        );
                        return;
                    }
                    drop(st);
                    script.handle(req, conn);
                }
                _ => {
                    conn.respond(404, &[("content-type", "text/plain")], b"no")
                }
            }
        });
        MachineSite { fx }
    }

    /// `http://127.0.0.1:PORT`: the issuer.
    pub fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.fx.port())
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.issuer())
    }

    pub fn summary(&self) -> String {
        self.fx.summary()
    }

    pub fn token_requests(&self) -> Vec<Request> {
        requests_under(&self.fx, Some("POST"), "/token")
    }

    pub fn device_requests(&self) -> Vec<Request> {
        requests_under(&self.fx, Some("POST"), "/device")
    }

    pub fn idp_requests(&self) -> Vec<Request> {
        requests_under(&self.fx, Some("POST"), "/idp/token")
    }

    /// Every request the site received.
    pub fn requests(&self) -> Vec<Request> {
        self.fx.requests()
    }

    pub fn mcp_requests(&self) -> Vec<Request> {
        requests_under(&self.fx, None, "/mcp")
    }
}
