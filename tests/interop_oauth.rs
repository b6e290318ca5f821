//! Interop of `rivumi-mcp login` with an official SDK's OAuth example: the
//! TypeScript SDK's `simpleStreamableHttp` server started with `--oauth
//! --oauth-strict`, from `@modelcontextprotocol/sdk` [`SDK_VERSION`] (a
//! dependency of server-everything, pinned by the lock file in
//! `fixtures/interop/node/`, installed into `.interop/node` by
//! `scripts/interop-setup.sh`). The package ships the example's compiled
//! source under `dist/esm/examples/server/`.
//!
//! One node process runs two express apps: the MCP server at
//! `http://localhost:MCP_PORT/mcp` (protected-resource metadata, bearer
//! tokens checked by introspection) and its authorization server at
//! `http://localhost:MCP_AUTH_PORT/` (`DemoInMemoryAuthProvider`: RFC 8414
//! metadata, dynamic registration only, PKCE S256, no consent page: the
//! authorization endpoint redirects straight to the callback). With
//! `--oauth-strict` the code is only exchanged for the `resource` of the
//! MCP server and the MCP server only takes tokens issued for it.
//!
//! The demo builds its URLs from the two ports, so they are chosen before
//! it starts (free ports from the OS, tried again if one was taken in
//! between). It listens with no host, so `fixtures/interop/loopback-only.cjs`
//! is preloaded to bind 127.0.0.1 only; rivumi-mcp resolves `localhost` to
//! loopback addresses only. The browser is `tests/conformance/browser.js`,
//! which follows the one redirect to rivumi-mcp's callback.
//!
//! The demo has no pre-registered client, so every server entry opts in to
//! `"registration": "dynamic"` with discovery from the MCP server.
//!
//! Known: the demo provider's `authorize` checks the redirect URI by exact
//! match (the SDK's own authorization handler allows any loopback port,
//! RFC 8252 §7.3), so a second login that reuses a stored registration
//! with a new ephemeral callback port is refused (`Unregistered
//! redirect_uri`). The reuse is tested with a fixed `redirect_port`.
//!
//! Conventions of `interop_http.rs`, with its helpers
//! (`tests/util/interop.rs`): missing servers fail the test with the setup
//! hint unless `RIVUMI_MCP_SKIP_INTEROP=1`; the test holds the [`Turn`]
//! lock all interop tests share; every command is timed and bounded by
//! [`LIMIT`] (this file's, longer than the shared one); the server runs in
//! its own process group, killed when the test ends (on panic too,
//! [`ServerProcess`]'s `Drop`), and no process with its marker may be left.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::interop::{
    NotListening, ServerProcess, Turn, expected_rows, node_and, tool_rows,
};
use crate::util::{
    Dir, Output, TestCommand, assert_contains, repo_root, write_mcp_json,
};

/// The SDK version whose example this test was written against.
const SDK_VERSION: &str = "1.32.2";

const SDK_DIR: &str = ".interop/node/node_modules/@modelcontextprotocol/sdk";
const EXAMPLE_JS: &str = "dist/esm/examples/server/simpleStreamableHttp.js";
const LOOPBACK_ONLY: &str = "fixtures/interop/loopback-only.cjs";
const BROWSER_JS: &str = "tests/conformance/browser.js";

/// The longest any one command may take (a login about 0.3 s here, the
/// `multi-greet` call 2 s by design): longer than the shared
/// [`crate::util::interop::LIMIT`].
const LIMIT: Duration = Duration::from_secs(10);

/// How long the demo may take to listen on both ports.
const START_LIMIT: Duration = Duration::from_secs(15);

/// The demo's tools, in its order, with their classification.
const DEMO_TOOLS: &[(&str, &str)] = &[
    ("greet", "execute"),
    ("multi-greet", "read"),
    ("collect-user-info", "execute"),
    ("collect-user-info-task", "execute"),
    ("start-notification-stream", "execute"),
    ("list-files", "execute"),
    ("delay", "execute"),
];

// ---- the demo server -------------------------------------------------------

/// Where the installed pieces are.
struct Installed {
    node: PathBuf,
    example_js: PathBuf,
    loopback_only: PathBuf,
    browser_js: PathBuf,
}

/// The installed pieces, or `None` when they are missing and
/// `RIVUMI_MCP_SKIP_INTEROP=1` (see [`node_and`]). Panics when they are
/// missing otherwise, and when the SDK is not the pinned version.
fn installed(test: &str) -> Option<Installed> {
    let root = repo_root();
    let sdk = root.join(SDK_DIR);
    let example_js = sdk.join(EXAMPLE_JS);
    let loopback_only = root.join(LOOPBACK_ONLY);
    let browser_js = root.join(BROWSER_JS);
    let files =
        [example_js.clone(), loopback_only.clone(), browser_js.clone()];
    let node = node_and(test, &files)?;
    let pkg = sdk.join("package.json");
    let text = std::fs::read_to_string(&pkg)
        .unwrap_or_else(|e| panic!("{}: {e}", pkg.display()));
    let v: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", pkg.display()));
    assert_eq!(
        v["version"],
        json!(SDK_VERSION),
        "{test}: {} is not the pinned SDK; run scripts/interop-setup.sh",
        pkg.display()
    );
    Some(Installed { node, example_js, loopback_only, browser_js })
}

/// A port that was free on 127.0.0.1 a moment ago.
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
    l.local_addr().expect("local address").port()
}

/// The demo process (MCP server and authorization server) and its ports.
/// Dropping it kills its process group; [`OAuthDemo::stop`] does the same
/// and then checks that nothing is left.
struct OAuthDemo {
    process: ServerProcess,
    mcp_port: u16,
    auth_port: u16,
}

impl OAuthDemo {
    /// Starts the demo on two free ports, trying new ones (3 times in
    /// all) when it exits before listening (a port taken in between).
    fn start(s: &Installed, dir: &Dir, marker: &str) -> OAuthDemo {
        let mut last = String::new();
        for _ in 0..3 {
            let mcp_port = free_port();
            let auth_port = free_port();
            if mcp_port == auth_port {
                continue;
            }
            match OAuthDemo::try_start(s, dir, marker, mcp_port, auth_port) {
                Ok(demo) => return demo,
                Err(e) => last = e,
            }
        }
        panic!("the OAuth demo did not start:\n{last}");
    }

    /// One attempt: `Err` with its stderr if the demo exited before
    /// listening on both ports; panics if it hangs.
    fn try_start(
        s: &Installed,
        dir: &Dir,
        marker: &str,
        mcp_port: u16,
        auth_port: u16,
    ) -> Result<OAuthDemo, String> {
        // The example ignores arguments other than its flags.
        let mut cmd = dir.program(&s.node);
        cmd.arg("--require")
            .arg(&s.loopback_only)
            .arg(&s.example_js)
            .args(["--oauth", "--oauth-strict", marker])
            .env("MCP_PORT", mcp_port.to_string())
            .env("MCP_AUTH_PORT", auth_port.to_string());
        let mut process = ServerProcess::spawn(&cmd, marker, "the demo");
        let mut listening = vec![];
        let took = process.wait_for(START_LIMIT, |line| {
            listening.extend(listening_port(line));
            listening.len() >= 2
        });
        let took = match took {
            Ok(took) => took,
            Err(NotListening::Timeout) => panic!(
                "the demo did not listen on both ports within \
                 {START_LIMIT:?}; stderr:\n{}",
                process.stderr()
            ),
            Err(NotListening::Closed) => {
                let err = format!(
                    "ports {mcp_port}, {auth_port}: exit {:?}; \
                     stderr:\n{}",
                    process.wait(),
                    process.stderr()
                );
                process.kill();
                return Err(err);
            }
        };
        listening.sort_unstable();
        let mut want = vec![mcp_port, auth_port];
        want.sort_unstable();
        assert_eq!(listening, want, "{}", process.stderr());
        eprintln!(
            "interop_oauth: demo listening on 127.0.0.1:{mcp_port} (MCP) \
             and 127.0.0.1:{auth_port} (AS) after {} ms",
            took.as_millis()
        );
        Ok(OAuthDemo { process, mcp_port, auth_port })
    }

    /// The MCP server's URL, as the demo names it.
    fn url(&self) -> String {
        format!("http://localhost:{}/mcp", self.mcp_port)
    }

    /// The authorization server's issuer, as the demo names it.
    fn issuer(&self) -> String {
        format!("http://localhost:{}/", self.auth_port)
    }

    /// Kills the demo's process group and checks that no process with its
    /// marker is left (see [`ServerProcess::stop`]).
    #[track_caller]
    fn stop(&mut self) {
        self.process.stop("the demo's process group was killed");
    }
}

/// The port of the preload's `loopback-only: listening on 127.0.0.1:PORT`.
fn listening_port(line: &str) -> Option<u16> {
    let rest = line.strip_prefix("loopback-only: listening on 127.0.0.1:")?;
    rest.trim_end().parse().ok()
}

// ---- the test's directory and commands -------------------------------------

/// The test: its turn (directory and marker, holding the lock all interop
/// tests share) and the demo. Fields drop in order: the demo is killed
/// before the turn lets go of the lock.
struct OAuthInterop {
    demo: OAuthDemo,
    browser: PathBuf,
    turn: Turn,
}

impl OAuthInterop {
    fn new(test: &str) -> Option<OAuthInterop> {
        let s = installed(test)?;
        let turn = Turn::take("interop_oauth", test);
        let demo = OAuthDemo::start(&s, &turn.dir, &turn.marker);
        Some(OAuthInterop { demo, browser: s.browser_js, turn })
    }

    fn dir(&self) -> &Dir {
        &self.turn.dir
    }

    fn creds(&self) -> PathBuf {
        self.dir().path("store/credentials.json")
    }

    /// `rivumi-mcp ARGS` with every server allowlisted, the test browser
    /// and the credential file in the test's directory.
    fn command(&self, args: &[&str]) -> TestCommand {
        let mut cmd = self.turn.command("demo,step,fixed", args);
        cmd.env("RIVUMI_MCP_BROWSER", &self.browser)
            .env("RIVUMI_MCP_CREDENTIALS", self.creds())
            .timeout(LIMIT * 3);
        cmd
    }

    /// Runs `rivumi-mcp ARGS`, checks the exit code and the time taken
    /// (within this file's [`LIMIT`]).
    #[track_caller]
    fn run(&self, args: &[&str], code: i32) -> Output {
        let cmd = self.command(args);
        self.turn.run_within(&cmd, args, code, LIMIT, || {
            format!(
                "\n--- demo stdout ---\n{}\n--- demo stderr ---\n{}",
                self.demo.process.stdout(),
                self.demo.process.stderr()
            )
        })
    }

    /// The stored credential file.
    fn stored(&self) -> Value {
        let path = self.creds();
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
    }
}

/// What `login SERVER` prints on success.
#[track_caller]
fn check_logged_in(t: &OAuthInterop, out: &Output, server: &str) {
    assert_contains(
        &out.stdout,
        &format!("logged in to '{server}' ({})", t.demo.url()),
    );
    check_authorization_url(t, &out.stderr);
}

/// The authorization URL printed on stderr: the demo's endpoint, PKCE
/// S256, the scope from the resource metadata, the loopback callback and
/// the MCP server as `resource`.
#[track_caller]
fn check_authorization_url(t: &OAuthInterop, stderr: &str) {
    let resource =
        format!("http%3A%2F%2Flocalhost%3A{}%2Fmcp", t.demo.mcp_port);
    for part in [
        format!(
            "  {}authorize?response_type=code&client_id=",
            t.demo.issuer()
        ),
        "&redirect_uri=http%3A%2F%2F127.0.0.1%3A".to_string(),
        "&code_challenge_method=S256&state=".to_string(),
        "&scope=mcp%3Atools&".to_string(),
        format!("&resource={resource}\n"),
    ] {
        assert_contains(stderr, &part);
    }
}

// ---- the test ---------------------------------------------------------------

#[test]
fn interop_oauth_ts_demo() {
    let Some(mut t) = OAuthInterop::new("interop_oauth_ts_demo") else {
        return;
    };
    let url = t.demo.url();
    let redirect_port = free_port();
    // Discovery from the MCP server, dynamic registration; `step` also
    // logs in inline; `fixed` keeps its callback port across logins.
    write_mcp_json(
        t.dir(),
        &[
            (
                "demo",
                json!({"url": url, "oauth": {"registration": "dynamic"}}),
            ),
            (
                "step",
                json!({"url": url,
                       "oauth": {"registration": "dynamic", "step_up": true}}),
            ),
            (
                "fixed",
                json!({"url": url,
                       "oauth": {"registration": "dynamic",
                                 "redirect_port": redirect_port}}),
            ),
        ],
    );

    // What the server says, unauthenticated.
    let out = t.run(&["discover", "demo"], 0);
    for part in [
        "unauthenticated request: HTTP 401".to_string(),
        format!("resource: {url}"),
        format!("authorization_servers: {}", t.demo.issuer()),
        "scopes_supported: mcp:tools".to_string(),
        format!("registration_endpoint: {}register", t.demo.issuer()),
        "code_challenge_methods_supported: S256".to_string(),
    ] {
        assert_contains(&out.stdout, &part);
    }
    assert!(!t.creds().exists(), "discover wrote the credential file");

    // Before login: the 401 and the hint.
    let out = t.run(&["list", "demo"], 6);
    assert_eq!(out.stdout, "");
    assert_contains(
        &out.stderr,
        "rivumi-mcp: server 'demo': authentication required (HTTP 401)",
    );
    assert_contains(&out.stderr, "run 'rivumi-mcp login demo'");

    // Login: registration, browser, callback, token for this resource.
    let out = t.run(&["login", "demo", "--timeout", "15"], 0);
    check_logged_in(&t, &out, "demo");
    let mode = std::fs::metadata(t.creds()).expect("credential file");
    assert_eq!(mode.permissions().mode() & 0o777, 0o600);
    let stored = t.stored();
    let entry = &stored["servers"]["demo"];
    assert_eq!(entry["url"], json!(url), "{entry:#}");
    assert_eq!(entry["issuer"], json!(t.demo.issuer()), "{entry:#}");
    assert_eq!(
        entry["token_endpoint"],
        json!(format!("{}token", t.demo.issuer())),
        "{entry:#}"
    );
    assert_eq!(entry["scope"], json!("mcp:tools"), "{entry:#}");
    let reg = &entry["registration"];
    assert_eq!(reg["client_name"], json!("rivumi-mcp"), "{entry:#}");
    assert_eq!(reg["token_endpoint_auth_method"], json!("none"), "{entry:#}");
    let client_id = entry["client_id"].as_str().expect("a client_id");
    assert_eq!(reg["client_id"], json!(client_id), "{entry:#}");
    let token = entry["access_token"].as_str().expect("an access token");

    let out = t.run(&["status"], 0);
    let row: Vec<&str> = out
        .stdout
        .lines()
        .find(|l| l.starts_with("demo "))
        .unwrap_or_else(|| panic!("no demo row:\n{}", out.stdout))
        .split_whitespace()
        .collect();
    assert_eq!(row[..2], ["demo", "oauth"], "{}", out.stdout);
    assert!(row[2].starts_with("authorization_code"), "{}", out.stdout);
    assert_eq!(row[3], "stored", "{}", out.stdout);
    assert!(!out.all().contains(token), "status shows the token");

    // The protected server, with the stored token.
    let out = t.run(&["list", "demo"], 0);
    assert_eq!(
        out.stdout.lines().next(),
        Some(
            "demo: simple-streamable-http-server 1.0.0 (protocol 2025-11-25)"
        ),
        "{}",
        out.stdout
    );
    let want = expected_rows("demo", DEMO_TOOLS);
    assert_eq!(tool_rows(&out.stdout, "demo"), want, "{}", out.stdout);
    assert_eq!(out.stderr, "");

    let out = t.run(&["list", "demo", "--json"], 0);
    let v = out.stdout_json();
    let s = &v["servers"][0];
    assert_eq!(s["ok"], json!(true), "{v:#}");
    assert_eq!(s["complete"], json!(true), "{v:#}");
    assert_eq!(s["protocol"], json!("2025-11-25"), "{v:#}");
    assert_eq!(
        s["serverInfo"]["name"],
        json!("simple-streamable-http-server"),
        "{v:#}"
    );

    let out = t.run(&["call", "-y", "demo", "greet", "name=Ann"], 0);
    assert_eq!(out.stdout, "Hello, Ann!\n");
    assert_eq!(out.stderr, "");
    // A read tool whose answer comes after log notifications on an event
    // stream; -v shows the bearer header by name only, and the session's
    // end.
    let out = t.run(&["call", "-v", "demo", "multi-greet", "name=Bo"], 0);
    assert_eq!(out.stdout, "Good morning, Bo!\n");
    assert_contains(
        &out.stderr,
        &format!(
            "rivumi-mcp: server 'demo': connecting to {url} with headers \
             [authorization]"
        ),
    );
    assert_contains(
        &out.stderr,
        "rivumi-mcp: server 'demo': DELETE session: HTTP 200\n",
    );
    assert!(!out.all().contains(token), "-v shows the token");
    // The demo saw the registered client (it logs the verified token).
    assert_contains(
        &t.demo.process.stdout(),
        &format!("clientId: '{client_id}'"),
    );

    // Step-up: no credential for `step`, so the call logs in inline
    // (a registration of its own) and is retried.
    let out = t.run(&["call", "-y", "step", "greet", "name=Cy"], 0);
    assert_eq!(out.stdout, "Hello, Cy!\n");
    check_authorization_url(&t, &out.stderr);
    let step = &t.stored()["servers"]["step"];
    assert_eq!(step["url"], json!(url), "{step:#}");
    assert_ne!(step["client_id"], json!(client_id), "{step:#}");

    // A fixed callback port: the second login reuses the registration
    // (same client id, same redirect URI) and gets a new token.
    let out = t.run(&["login", "fixed", "--timeout", "15"], 0);
    check_logged_in(&t, &out, "fixed");
    let callback = format!(
        "&redirect_uri=http%3A%2F%2F127.0.0.1%3A{redirect_port}%2Fcallback&"
    );
    assert_contains(&out.stderr, &callback);
    let first = t.stored()["servers"]["fixed"].clone();
    assert_eq!(
        first["registration"]["redirect_uris"],
        json!([format!("http://127.0.0.1:{redirect_port}/callback")]),
        "{first:#}"
    );
    let out = t.run(&["login", "fixed", "--timeout", "15"], 0);
    check_logged_in(&t, &out, "fixed");
    assert_contains(&out.stderr, &callback);
    let second = t.stored()["servers"]["fixed"].clone();
    assert_eq!(second["client_id"], first["client_id"], "{second:#}");
    assert_ne!(second["access_token"], first["access_token"], "{second:#}");
    let out = t.run(&["call", "-y", "fixed", "greet", "name=Di"], 0);
    assert_eq!(out.stdout, "Hello, Di!\n");

    // Logout: the entry goes, the server wants a login again; the others
    // stay.
    t.run(&["logout", "demo"], 0);
    let stored = t.stored();
    assert!(stored["servers"].get("demo").is_none(), "{stored:#}");
    assert!(stored["servers"].get("step").is_some(), "{stored:#}");
    let out = t.run(&["list", "demo"], 6);
    assert_contains(&out.stderr, "authentication required (HTTP 401)");

    t.demo.stop();
}
