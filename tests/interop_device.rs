//! Interop of the device authorization grant (RFC 8628) with a real
//! authorization server: node-oidc-provider (`oidc-provider` on npm,
//! pinned by `fixtures/interop/auth-node/package-lock.json`, installed into
//! `.interop/auth-node` by `scripts/interop-setup.sh`), run by
//! `fixtures/interop/device_as.mjs` on 127.0.0.1 with one public client
//! allowed the device and refresh grants.
//!
//! `rivumi-mcp login web` (with `"grant": "device_code"`) prints the
//! verification URI; the test reads it from stderr and hands it to
//! `fixtures/interop/device_approve.mjs`, the "person", who goes through
//! the provider's own pages (confirm the code, log in, consent) while
//! rivumi-mcp polls. The provider checks the PKCE verifier and the
//! `resource` (RFC 8707); the token it issues is then presented to an MCP
//! server that trusts it, and `login --refresh` redeems the provider's
//! refresh token (which it rotates).
//!
//! Conventions of the other interop tests (`tests/util/interop.rs`):
//! missing installs fail with the setup hint unless
//! `RIVUMI_MCP_SKIP_INTEROP=1`; the [`Turn`] lock; the server in its own
//! process group, killed when the test ends.

use std::io::{BufRead, BufReader};
use std::time::Duration;

use serde_json::json;

use crate::util::interop::{ServerProcess, Turn, node_and};
use crate::util::oauth::{LIST_OUT, OAuthSite, SiteOptions, read_json};
use crate::util::{repo_root, wait_with_timeout, write_mcp_json};

const MODULES: &str = ".interop/auth-node/node_modules";
const AS_JS: &str = "fixtures/interop/device_as.mjs";
const APPROVE_JS: &str = "fixtures/interop/device_approve.mjs";
/// The provider polls at its default interval (5 s): a login takes a
/// few polls.
const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn interop_device_grant_with_node_oidc_provider() {
    let test = "interop_device_grant_with_node_oidc_provider";
    let root = repo_root();
    let files = [
        root.join(MODULES).join("oidc-provider/package.json"),
        root.join(AS_JS),
    ];
    let Some(node) = node_and(test, &files) else { return };
    let turn = Turn::take("interop_device", test);
    let dir = &turn.dir;

    let mut cmd = dir.program(&node);
    cmd.arg(root.join(AS_JS))
        .arg(&turn.marker)
        .env("AUTH_NODE_MODULES", root.join(MODULES));
    let mut process = ServerProcess::spawn(&cmd, &turn.marker, "device_as");
    let mut issuer = String::new();
    let started = process.wait_for(Duration::from_secs(20), |line| match line
        .strip_prefix("device_as: listening on ")
    {
        Some(u) => {
            issuer = u.trim().to_string();
            true
        }
        None => false,
    });
    if let Err(e) = started {
        panic!("device_as did not start ({e:?}):\n{}", process.stderr());
    }

    // An MCP server that trusts the provider's tokens (told of each one
    // below, as a resource server would learn by introspection).
    let mcp =
        OAuthSite::start(SiteOptions { mcp: true, ..SiteOptions::default() });
    write_mcp_json(
        dir,
        &[(
            "web",
            json!({"url": mcp.url(), "oauth": {
                "client_id": "rivumi-device",
                "authorization_server": issuer,
                "scopes": ["mcp:tools", "offline_access"],
                "grant": "device_code",
            }}),
        )],
    );
    let creds = dir.path("store/credentials.json");
    let rivumi = |args: &[&str]| {
        let mut c = turn.command("web", args);
        c.env("RIVUMI_MCP_CREDENTIALS", &creds).timeout(LIMIT);
        c
    };

    // The login: read the verification URI, let the person approve.
    let login = rivumi(&["login", "web", "--timeout", "50"]);
    let mut child = login.spawn();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if line.contains("?user_code=") {
                let _ = tx.send(line.trim().to_string());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let uri = rx.recv_timeout(LIMIT).expect("a verification URI");
    assert!(uri.starts_with(&format!("{issuer}/device?user_code=")), "{uri}");
    let approve = dir
        .program(&node)
        .arg(root.join(APPROVE_JS))
        .arg(&uri)
        .timeout(LIMIT)
        .run();
    assert_eq!(approve.code, Some(0), "{approve:?}");
    let out = wait_with_timeout(child, &login);
    let stderr = reader.join().unwrap();
    assert_eq!(out.code, Some(0), "{out:?}\n{stderr}");
    assert!(out.stdout.starts_with("logged in to 'web'"), "{}", out.stdout);
    assert!(stderr.contains("and enter the code:"), "{stderr}");

    let entry = read_json(&creds)["servers"]["web"].clone();
    let token = entry["access_token"].as_str().expect("a token").to_string();
    let refresh = entry["refresh_token"].as_str().expect("a refresh token");
    assert_eq!(entry["issuer"], json!(issuer));
    assert_eq!(entry["token_endpoint"], json!(format!("{issuer}/token")));
    mcp.ledger().issue(&token, "mcp:tools");
    let out = rivumi(&["list", "web"]).run();
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, LIST_OUT);

    // The provider's refresh token, redeemed and rotated.
    let out = rivumi(&["login", "web", "--refresh"]).run();
    assert_eq!(out.code, Some(0), "{out:?}");
    let after = read_json(&creds)["servers"]["web"].clone();
    assert_ne!(after["access_token"].as_str(), Some(token.as_str()));
    assert_ne!(after["refresh_token"].as_str(), Some(refresh));
    process.stop(test);
}
