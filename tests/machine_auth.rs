//! The machine grants against the in-process [`MachineSite`]: a
//! `private_key_jwt` client (ES256 and RS256 keys, and the key files and
//! servers refused), workload identity (the jwt-bearer grant, its
//! assertion from a variable or a file, refusals that are final),
//! enterprise-managed authorization (token exchange at the IdP, then
//! jwt-bearer) and DPoP (proofs at the token endpoint and on every MCP
//! request, nonces at both, a nonce loop that ends); the device grant
//! with a client key and DPoP.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::util::http::Request;
use crate::util::oauth::{
    LIST_OUT, MachineOptions, MachineSite, USER_CODE, config, creds,
    form_decode, jwk_thumbprint, jwt_claims, last_line, param, read_json,
    verify_es256, web_command,
};
use crate::util::{Dir, TestCommand, assert_absent, assert_contains};

const CLIENT: &str = "machine-1";
const ASSERTION_VAR: &str = "RIVUMI_TEST_ASSERTION";

/// A throwaway key of fixtures/keys/.
fn key_pem(name: &str) -> String {
    let p = crate::util::repo_root().join("fixtures/keys").join(name);
    std::fs::read_to_string(&p).unwrap()
}

/// Writes `bytes` as `name` in the Dir with `mode`.
fn write_key(dir: &Dir, name: &str, bytes: &[u8], mode: u32) -> PathBuf {
    let p = dir.path(name);
    std::fs::write(&p, bytes).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))
        .unwrap();
    p
}

/// The DER inside a PEM `PRIVATE KEY`.
fn der(pem: &str) -> Vec<u8> {
    let b64: String =
        pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD.decode(b64).unwrap()
}

fn cmd(dir: &Dir, args: &[&str]) -> TestCommand {
    web_command(dir, args)
}

/// A site with `opts` and a Dir whose server `web` has this `oauth` block.
fn site(test: &str, opts: MachineOptions, oauth: Value) -> (Dir, MachineSite) {
    let site = MachineSite::start(opts);
    let dir = Dir::new(test);
    let mut oauth = oauth;
    oauth["authorization_server"] = json!(site.issuer());
    config(&dir, &site.url(), oauth);
    (dir, site)
}

fn entry(dir: &Dir) -> Value {
    read_json(&creds(dir))["servers"]["web"].clone()
}

/// The one token request, as a form.
fn one_token_request(site: &MachineSite) -> (Request, Vec<(String, String)>) {
    let t = site.token_requests();
    assert_eq!(t.len(), 1, "{}", site.summary());
    let f = form_decode(&t[0].body);
    (t[0].clone(), f)
}

/// Verifies a client assertion made with the P-256 key `pem`.
fn verify_with_p256(jwt: &str, pem: &str) -> bool {
    use ring::signature::{
        ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair,
    };
    let rng = ring::rand::SystemRandom::new();
    let k = EcdsaKeyPair::from_pkcs8(
        &ECDSA_P256_SHA256_FIXED_SIGNING,
        &der(pem),
        &rng,
    )
    .unwrap();
    let p = k.public_key().as_ref();
    let jwk = json!({"x": URL_SAFE_NO_PAD.encode(&p[1..33]), "y": URL_SAFE_NO_PAD.encode(&p[33..65])});
    let (input, sig) = jwt.rsplit_once('.').unwrap();
    verify_es256(input, sig, &jwk)
}

/// Checks the RFC 7523 §3 claims of a client assertion.
fn check_assertion_claims(jwt: &str, issuer: &str) {
    let c = jwt_claims(jwt);
    assert_eq!(c["iss"], CLIENT);
    assert_eq!(c["sub"], CLIENT);
    assert_eq!(c["aud"], issuer);
    assert!(c["jti"].as_str().is_some_and(|j| j.len() >= 16), "{c}");
    let (iat, exp) = (c["iat"].as_u64().unwrap(), c["exp"].as_u64().unwrap());
    assert!(exp > iat && exp - iat <= 300, "{c}");
}

// ---------------------------------------------------------------------------
// private_key_jwt
// ---------------------------------------------------------------------------

#[test]
fn private_key_jwt_signs_an_es256_client_assertion() {
    let opts = MachineOptions {
        signing_algs: Some(vec!["ES256".into()]),
        ..Default::default()
    };
    let (dir, site) = site(
        "machine_pkjwt_es256",
        opts,
        json!({"client_id": CLIENT, "grant": "client_credentials",
               "client_key_file": "client.pem"}),
    );
    let pem = key_pem("p256.pem");
    let key = write_key(&dir, "client.pem", pem.as_bytes(), 0o600);
    config(
        &dir,
        &site.url(),
        json!({"client_id": CLIENT,
        "grant": "client_credentials", "client_key_file": key,
        "authorization_server": site.issuer(), "scopes": ["mcp:tools"]}),
    );
    let out = cmd(&dir, &["login", "web"]).assert_exit(0);
    assert_contains(&out.stdout, "logged in to 'web'");
    let (t, f) = one_token_request(&site);
    assert_eq!(t.status, Some(200));
    assert_eq!(t.header("authorization"), None);
    assert_eq!(param(&f, "grant_type"), "client_credentials");
    assert_eq!(param(&f, "client_id"), CLIENT);
    assert_eq!(
        param(&f, "client_assertion_type"),
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    );
    assert_eq!(param(&f, "resource"), site.url());
    assert!(f.iter().all(|(k, _)| k != "client_secret"));
    let jwt = param(&f, "client_assertion");
    assert!(verify_with_p256(jwt, &pem), "the assertion verifies");
    check_assertion_claims(jwt, &site.issuer());
    let header: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD.decode(jwt.split('.').next().unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(header["alg"], "ES256");
    // The key is nowhere in what rivumi-mcp wrote.
    let stored = std::fs::read_to_string(creds(&dir)).unwrap();
    assert_absent(&stored, &der_b64(&pem));
    assert_eq!(entry(&dir)["auth_method"], "private_key_jwt");
    let out = cmd(&dir, &["list", "web"]).assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
    let out = cmd(&dir, &["status", "--json"]).assert_exit(0);
    let s = &out.stdout_json()["servers"][0];
    assert_eq!(s["grant"], "client_credentials");
    assert_eq!(s["client_auth"], "private_key_jwt");
    assert_eq!(s["dpop"], false);
}

fn der_b64(pem: &str) -> String {
    pem.lines().filter(|l| !l.starts_with("-----")).collect::<String>()[..40]
        .to_string()
}

#[test]
fn private_key_jwt_signs_rs256_with_a_der_key() {
    let opts = MachineOptions {
        signing_algs: Some(vec!["ES256".into(), "RS256".into()]),
        ..Default::default()
    };
    let (dir, site) =
        site("machine_pkjwt_rs256", opts, json!({"client_id": CLIENT}));
    let pem = key_pem("rsa2048.pem");
    let key = write_key(&dir, "client.der", &der(&pem), 0o400);
    config(
        &dir,
        &site.url(),
        json!({"client_id": CLIENT,
        "grant": "client_credentials", "client_key_file": key,
        "authorization_server": site.issuer()}),
    );
    cmd(&dir, &["login", "web"]).assert_exit(0);
    let (_, f) = one_token_request(&site);
    let jwt = param(&f, "client_assertion");
    check_assertion_claims(jwt, &site.issuer());
    let k = ring::signature::RsaKeyPair::from_pkcs8(&der(&pem)).unwrap();
    let (input, sig) = jwt.rsplit_once('.').unwrap();
    use ring::signature::KeyPair;
    let ok = ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        k.public_key().as_ref(),
    )
    .verify(input.as_bytes(), &URL_SAFE_NO_PAD.decode(sig).unwrap());
    assert!(ok.is_ok(), "the RS256 assertion verifies");
}

/// A key file a refusal test writes: a fixture key with a mode, a
/// symbolic link to a good key, or nothing.
enum KeyFile {
    Fixture(&'static str, u32),
    Symlink,
    Missing,
}

impl KeyFile {
    fn write(&self, d: &Dir) -> PathBuf {
        match self {
            KeyFile::Fixture(name, mode) => {
                write_key(d, "client.pem", key_pem(name).as_bytes(), *mode)
            }
            KeyFile::Symlink => {
                let real = KeyFile::Fixture("p256.pem", 0o600).write(d);
                let link = d.path("link.pem");
                std::os::unix::fs::symlink(real, &link).unwrap();
                link
            }
            KeyFile::Missing => d.path("nothing.pem"),
        }
    }
}

/// Each bad key file, or a server that takes no algorithm of ours, is
/// refused with one line, before any token request.
#[test]
fn private_key_jwt_refusals() {
    use KeyFile::*;
    let hs = Some(vec!["none".to_string(), "HS256".to_string()]);
    let cases = [
        ("symlink", Symlink, None, 3, "is a symbolic link; refusing it"),
        (
            "world-readable",
            Fixture("p256.pem", 0o644),
            None,
            3,
            "has mode 644; a private key must be readable by you only",
        ),
        (
            "sec1",
            Fixture("p256-sec1.pem", 0o600),
            None,
            3,
            "is not a PKCS#8 key: convert it (openssl pkcs8 -topk8",
        ),
        (
            "p384",
            Fixture("p384.pem", 0o600),
            None,
            3,
            "is an EC key on another curve than P-256",
        ),
        (
            "rsa1024",
            Fixture("rsa1024.pem", 0o600),
            None,
            3,
            "is not a usable RSA key: it is shorter than 2048 bits",
        ),
        ("missing", Missing, None, 3, "does not exist"),
        (
            "hs256-only",
            Fixture("p256.pem", 0o600),
            hs,
            6,
            "accepts client assertions signed with none, HS256 only; the key in",
        ),
    ];
    for (name, file, algs, code, want) in cases {
        let opts = MachineOptions { signing_algs: algs, ..Default::default() };
        let test = format!("machine_pkjwt_refused_{name}");
        let (dir, site) = site(&test, opts, json!({"client_id": CLIENT}));
        let key = file.write(&dir);
        config(
            &dir,
            &site.url(),
            json!({"client_id": CLIENT,
            "grant": "client_credentials", "client_key_file": key,
            "authorization_server": site.issuer()}),
        );
        let out = cmd(&dir, &["login", "web"]).assert_exit(code);
        let line = last_line(&out);
        assert!(line.starts_with("rivumi-mcp: "), "{name}: {line}");
        assert_contains(&line, want);
        assert_eq!(out.stderr.lines().count(), 1, "{name}: {}", out.stderr);
        assert!(
            site.token_requests().is_empty(),
            "{name}: {}",
            site.summary()
        );
        assert!(!creds(&dir).exists(), "{name}");
    }
}

// ---------------------------------------------------------------------------
// Workload identity: the jwt-bearer grant
// ---------------------------------------------------------------------------

/// A JWT as a platform would hand one (the signature is not ours to
/// check), addressed to `aud` and expiring `exp`.
fn workload_jwt(exp: u64, aud: &str) -> String {
    jwt_with(json!({"iss": "https://ci.example", "sub": "repo:x",
                    "aud": aud, "exp": exp}))
}

/// A JWT with these claims and a base64url signature.
fn jwt_with(claims: Value) -> String {
    let h = URL_SAFE_NO_PAD.encode(br#"{"alg":"ES256","typ":"JWT"}"#);
    let c = URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{h}.{c}.c2ln")
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn workload_identity_presents_the_assertion_from_a_variable() {
    let (dir, site) = site(
        "machine_wif_env",
        MachineOptions::default(),
        json!({"client_id": CLIENT, "grant": "jwt_bearer",
               "assertion_env_var": ASSERTION_VAR, "scopes": ["mcp:tools"]}),
    );
    let jwt = workload_jwt(now() + 600, &site.issuer());
    let out =
        cmd(&dir, &["login", "web"]).env(ASSERTION_VAR, &jwt).assert_exit(0);
    assert_absent(&out.all(), &jwt);
    let (t, f) = one_token_request(&site);
    assert_eq!(t.status, Some(200));
    assert_eq!(
        param(&f, "grant_type"),
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(param(&f, "assertion"), jwt);
    assert_eq!(param(&f, "scope"), "mcp:tools");
    assert_eq!(param(&f, "resource"), site.url());
    assert_eq!(param(&f, "client_id"), CLIENT);
    let out = cmd(&dir, &["list", "web"]).assert_exit(0);
    assert_eq!(out.stdout, LIST_OUT);
    let out = cmd(&dir, &["status"]).assert_exit(0);
    assert_contains(&out.stdout, " jwt_bearer ");
}

#[test]
fn workload_identity_reads_a_file_and_refusals_are_final() {
    let (dir, site) = site(
        "machine_wif_file",
        MachineOptions {
            refuse: Some("invalid_grant".into()),
            ..Default::default()
        },
        json!({}),
    );
    let file = dir.path("token.jwt");
    std::fs::write(
        &file,
        format!("{}\n", workload_jwt(now() + 600, &site.issuer())),
    )
    .unwrap();
    config(
        &dir,
        &site.url(),
        json!({"client_id": CLIENT, "grant": "jwt_bearer",
        "assertion_file": file, "authorization_server": site.issuer()}),
    );
    let out = cmd(&dir, &["login", "web"]).assert_exit(6);
    assert_eq!(
        last_line(&out),
        format!(
            "rivumi-mcp: server 'web': token endpoint {}/token answered HTTP \
             400: invalid_grant: refused by the test",
            site.issuer()
        )
    );
    // One request: no retry, no other grant.
    let (_, f) = one_token_request(&site);
    assert_eq!(
        param(&f, "grant_type"),
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert!(!creds(&dir).exists());
}

#[test]
fn workload_identity_refuses_a_bad_assertion_before_sending_it() {
    let (dir, site) =
        site("machine_wif_bad", MachineOptions::default(), json!({}));
    let file = dir.path("token.jwt");
    let by_file = json!({"assertion_file": file});
    let cases = [
        (
            "unset",
            None,
            json!({"assertion_env_var": ASSERTION_VAR}),
            3,
            "environment variable 'RIVUMI_TEST_ASSERTION' holds no assertion",
        ),
        (
            "expired",
            Some(workload_jwt(1000, &site.issuer()).into_bytes()),
            by_file.clone(),
            6,
            "token.jwt expired at 1970-01-01T00:16:40",
        ),
        (
            "not a jwt",
            Some(b"hello".to_vec()),
            by_file.clone(),
            3,
            "token.jwt does not hold a JWT",
        ),
        // A 100 MB file: a sparse one (set_len), read only so far.
        (
            "100 MB",
            None,
            by_file.clone(),
            3,
            "token.jwt is larger than 65536 bytes",
        ),
        // A FIFO nobody writes to: refused at once, never waited on.
        ("fifo", None, by_file, 3, "token.jwt is not a regular file"),
    ];
    for (name, content, source, code, want) in cases {
        match content {
            Some(bytes) => std::fs::write(&file, bytes).unwrap(),
            None if name == "100 MB" => {
                let h = std::fs::File::create(&file).unwrap();
                h.set_len(100 << 20).unwrap();
            }
            None if name == "fifo" => {
                std::fs::remove_file(&file).unwrap();
                let made = std::process::Command::new("mkfifo")
                    .arg(&file)
                    .status()
                    .unwrap();
                assert!(made.success());
            }
            None => {}
        }
        let mut oauth = json!({"client_id": CLIENT, "grant": "jwt_bearer",
            "authorization_server": site.issuer()});
        oauth
            .as_object_mut()
            .unwrap()
            .extend(source.as_object().unwrap().clone());
        config(&dir, &site.url(), oauth);
        let out = cmd(&dir, &["login", "web"])
            .env_remove(ASSERTION_VAR)
            .assert_exit(code);
        assert_contains(&last_line(&out), want);
        assert_eq!(out.stderr.lines().count(), 1, "{name}: {}", out.stderr);
        assert!(
            site.token_requests().is_empty(),
            "{name}: {}",
            site.summary()
        );
    }
}

/// A workload assertion whose `exp` is not a non-negative integer, or
/// whose signature is not base64url, is refused before any request (exit
/// 3); one addressed (`aud`) to another audience is refused before the
/// token request (issue 22, items 7 and 12).
#[test]
fn workload_assertions_malformed_or_for_another_audience_are_not_sent() {
    let (dir, site) =
        site("machine_wif_shape", MachineOptions::default(), json!({}));
    config(
        &dir,
        &site.url(),
        json!({"client_id": CLIENT, "grant": "jwt_bearer",
               "assertion_env_var": ASSERTION_VAR,
               "authorization_server": site.issuer()}),
    );
    let iss = site.issuer();
    let good = workload_jwt(now() + 600, &iss);
    let (input, _) = good.rsplit_once('.').unwrap();
    let exp = |v: Value| jwt_with(json!({"aud": iss, "exp": v}));
    let malformed = [
        (
            exp(json!("9999999999")),
            "has an 'exp' that is not a non-negative integer",
        ),
        (exp(json!(-5)), "has an 'exp' that is not a non-negative integer"),
        (exp(json!(1e12)), "has an 'exp' that is not a non-negative integer"),
        (
            format!("{input}.a+b/c"),
            "does not hold a JWT: its signature is not base64url",
        ),
        (
            format!("{input}."),
            "does not hold a JWT: its signature is not base64url",
        ),
    ];
    for (jwt, want) in malformed {
        let out = cmd(&dir, &["login", "web"])
            .env(ASSERTION_VAR, &jwt)
            .assert_exit(3);
        assert_contains(&last_line(&out), want);
        assert_absent(&out.all(), &jwt);
        assert!(site.requests().is_empty(), "{want}: {}", site.summary());
    }
    for aud in [
        json!("https://elsewhere.example"),
        json!(["sts.amazonaws.com"]),
        Value::Null,
    ] {
        let mut claims = json!({"sub": "repo:x", "exp": now() + 600});
        if !aud.is_null() {
            claims["aud"] = aud.clone();
        }
        let jwt = jwt_with(claims);
        let out = cmd(&dir, &["login", "web"])
            .env(ASSERTION_VAR, &jwt)
            .assert_exit(3);
        assert_contains(
            &last_line(&out),
            &format!(
                "which does not name the authorization server it would be \
                 sent to ({iss}); not sent"
            ),
        );
        assert_absent(&out.all(), &jwt);
        assert!(site.token_requests().is_empty(), "{aud}: {}", site.summary());
    }
    // Addressed to the token endpoint: sent.
    let jwt = workload_jwt(now() + 600, &format!("{iss}/token"));
    cmd(&dir, &["login", "web"]).env(ASSERTION_VAR, &jwt).assert_exit(0);
    let (_, f) = one_token_request(&site);
    assert_eq!(param(&f, "assertion"), jwt);
}

// ---------------------------------------------------------------------------
// Enterprise-managed authorization (SEP-990)
// ---------------------------------------------------------------------------

fn enterprise(test: &str, opts: MachineOptions) -> (Dir, MachineSite) {
    let (dir, site) = site(test, opts, json!({}));
    config(
        &dir,
        &site.url(),
        json!({"client_id": CLIENT,
        "client_secret_env_var": "RIVUMI_TEST_SECRET", "grant": "enterprise",
        "assertion_env_var": ASSERTION_VAR, "authorization_server": site.issuer(),
        "idp_token_endpoint": format!("{}/idp/token", site.issuer()),
        "idp_client_id": "idp-client"}),
    );
    (dir, site)
}

#[test]
fn enterprise_exchanges_the_id_token_then_presents_the_id_jag() {
    let (dir, site) =
        enterprise("machine_enterprise", MachineOptions::default());
    let id_token = workload_jwt(now() + 600, &site.issuer());
    cmd(&dir, &["login", "web"])
        .env(ASSERTION_VAR, &id_token)
        .env("RIVUMI_TEST_SECRET", "s3cret")
        .assert_exit(0);
    let x = site.idp_requests();
    assert_eq!(x.len(), 1, "{}", site.summary());
    let f = form_decode(&x[0].body);
    assert_eq!(
        param(&f, "grant_type"),
        "urn:ietf:params:oauth:grant-type:token-exchange"
    );
    assert_eq!(
        param(&f, "requested_token_type"),
        "urn:ietf:params:oauth:token-type:id-jag"
    );
    assert_eq!(
        param(&f, "subject_token_type"),
        "urn:ietf:params:oauth:token-type:id_token"
    );
    assert_eq!(param(&f, "subject_token"), id_token);
    assert_eq!(param(&f, "audience"), site.issuer());
    assert_eq!(param(&f, "resource"), site.url());
    assert_eq!(param(&f, "client_id"), "idp-client");
    let (t, f) = one_token_request(&site);
    assert_eq!(
        param(&f, "grant_type"),
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(param(&f, "assertion"), "id-jag-1");
    let basic = base64::engine::general_purpose::STANDARD
        .encode(format!("{CLIENT}:s3cret"));
    assert_eq!(
        t.header("authorization"),
        Some(format!("Basic {basic}").as_str())
    );
    cmd(&dir, &["list", "web"]).assert_exit(0);
}

#[test]
fn enterprise_stops_when_the_idp_refuses() {
    let opts = MachineOptions { idp_refuse: true, ..Default::default() };
    let (dir, site) = enterprise("machine_enterprise_refused", opts);
    let out = cmd(&dir, &["login", "web"])
        .env(ASSERTION_VAR, workload_jwt(now() + 600, &site.issuer()))
        .env("RIVUMI_TEST_SECRET", "s3cret")
        .assert_exit(6);
    assert_contains(
        &last_line(&out),
        "/idp/token answered HTTP 400: invalid_grant",
    );
    assert_eq!(site.idp_requests().len(), 1);
    assert!(site.token_requests().is_empty(), "{}", site.summary());
}

// ---------------------------------------------------------------------------
// DPoP
// ---------------------------------------------------------------------------

fn dpop_site(test: &str, opts: MachineOptions) -> (Dir, MachineSite) {
    let (dir, site) = site(test, opts, json!({}));
    let jwt = dir.path("token.jwt");
    std::fs::write(&jwt, workload_jwt(now() + 600, &site.issuer())).unwrap();
    config(
        &dir,
        &site.url(),
        json!({"client_id": CLIENT, "grant": "jwt_bearer",
        "assertion_file": jwt, "authorization_server": site.issuer(), "dpop": "auto"}),
    );
    (dir, site)
}

/// The claims of a request's DPoP proof.
fn proof_claims(r: &Request) -> Value {
    jwt_claims(r.header("dpop").expect("a DPoP proof"))
}

#[test]
fn dpop_binds_the_token_and_proves_every_request() {
    let opts = MachineOptions {
        dpop_algs: Some(vec!["ES256".into()]),
        ..Default::default()
    };
    let (dir, site) = dpop_site("machine_dpop", opts);
    cmd(&dir, &["login", "web"]).assert_exit(0);
    let (t, _) = one_token_request(&site);
    assert_eq!(t.status, Some(200), "{}", site.summary());
    let c = proof_claims(&t);
    assert_eq!(c["htu"], format!("{}/token", site.issuer()));
    assert!(c.get("ath").is_none());
    let e = entry(&dir);
    assert_eq!(e["access_token"], "dpop-at-1");
    assert!(e["dpop_key"].is_string());
    cmd(&dir, &["call", "web", "echo", "text=hi", "--yes"]).assert_exit(0);
    let mcp = site.mcp_requests();
    assert!(mcp.len() >= 2, "{}", site.summary());
    let mut jtis = vec![];
    for r in &mcp {
        assert_eq!(
            r.header("authorization"),
            Some("DPoP dpop-at-1"),
            "never Bearer"
        );
        assert!(r.status.is_some_and(|s| s < 300), "{}", site.summary());
        let c = proof_claims(r);
        assert_eq!(c["htm"], r.method.as_str());
        assert_eq!(c["htu"], site.url());
        jtis.push(c["jti"].as_str().unwrap().to_string());
    }
    let n = jtis.len();
    jtis.sort();
    jtis.dedup();
    assert_eq!(jtis.len(), n, "a fresh proof for every request");
    // The proof key is the one the token was bound to at the token endpoint.
    let h: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(mcp[0].header("dpop").unwrap().split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap();
    let th: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(t.header("dpop").unwrap().split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(jwk_thumbprint(&h["jwk"]), jwk_thumbprint(&th["jwk"]));
    let out = cmd(&dir, &["status"]).assert_exit(0);
    assert_contains(&out.stdout, " jwt_bearer+dpop ");
    assert_absent(&out.all(), e["dpop_key"].as_str().unwrap());
}

/// A stored DPoP-bound token is kept warm: the daemon presents it as
/// `DPoP` with a fresh proof from the bound key for every request, one
/// session for two invocations, and writes neither the token nor the key;
/// with `--refresh` the renewal is the invocation's, so that run is cold.
#[test]
fn dpop_login_is_kept_warm_with_fresh_proofs_from_its_key() {
    let opts = MachineOptions {
        dpop_algs: Some(vec!["ES256".into()]),
        ..Default::default()
    };
    let (dir, site) = dpop_site("machine_dpop_warm", opts);
    cmd(&dir, &["login", "web"]).assert_exit(0);
    let (t, _) = one_token_request(&site);
    let bound = jwk_thumbprint(&jwt_header(t.header("dpop").unwrap())["jwk"]);
    let d = crate::daemon::Daemon::start(&dir, &[]);
    for _ in 0..2 {
        let out = cmd(&dir, &["call", "web", "echo", "text=hi", "--yes"])
            .assert_exit(0);
        assert_eq!(out.stdout.trim(), "hi");
    }
    let mcp = site.mcp_requests();
    let inits = |mcp: &[Request]| {
        mcp.iter().filter(|r| r.body.contains("\"initialize\"")).count()
    };
    assert_eq!(inits(&mcp), 1, "one warm session: {}", site.summary());
    let mut jtis = vec![];
    for r in &mcp {
        assert_eq!(r.header("authorization"), Some("DPoP dpop-at-1"));
        let proof = r.header("dpop").expect("a DPoP proof");
        assert_eq!(jwk_thumbprint(&jwt_header(proof)["jwk"]), bound);
        assert_eq!(proof_claims(r)["htm"], r.method.as_str());
        jtis.push(proof_claims(r)["jti"].as_str().unwrap().to_string());
    }
    let n = jtis.len();
    jtis.sort();
    jtis.dedup();
    assert_eq!(jtis.len(), n, "a fresh proof for every request");
    assert_eq!(crate::daemon::servers(&dir).len(), 1);
    cmd(&dir, &["call", "web", "echo", "text=hi", "--yes", "--refresh"])
        .assert_exit(0);
    assert_eq!(inits(&site.mcp_requests()), 2, "--refresh runs cold");
    assert_eq!(crate::daemon::servers(&dir).len(), 1);
    let key = entry(&dir)["dpop_key"].as_str().unwrap().to_string();
    let status = cmd(&dir, &["daemon", "status", "--json"]).assert_exit(0);
    for text in [&status.stdout, &d.log_text()] {
        assert_absent(text, &key);
        assert_absent(text, "dpop-at-1");
    }
}

/// The decoded header of a compact JWT.
fn jwt_header(jwt: &str) -> Value {
    let head = jwt.split('.').next().unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(head).unwrap()).unwrap()
}

#[test]
fn dpop_auto_stays_off_when_the_server_does_not_list_it() {
    let (dir, site) =
        dpop_site("machine_dpop_auto_off", MachineOptions::default());
    cmd(&dir, &["login", "web"]).assert_exit(0);
    let (t, _) = one_token_request(&site);
    assert_eq!(t.header("dpop"), None);
    assert_eq!(entry(&dir)["dpop_key"], Value::Null);
    cmd(&dir, &["list", "web"]).assert_exit(0);
    assert!(
        site.mcp_requests()
            .iter()
            .all(|r| r.header("authorization") == Some("Bearer at-1"))
    );
}

#[test]
fn dpop_true_refuses_a_bearer_token() {
    // An authorization server that ignores the proof issues Bearer: with
    // "dpop": true that is refused and nothing is stored; with "auto" it
    // is taken as it is.
    let opts = MachineOptions { ignore_dpop: true, ..Default::default() };
    let (dir, site) = site("machine_dpop_true_bearer", opts, json!({}));
    let jwt = dir.path("token.jwt");
    std::fs::write(&jwt, workload_jwt(now() + 600, &site.issuer())).unwrap();
    let entry_with = |dpop: Value| {
        json!({"client_id": CLIENT, "grant": "jwt_bearer",
               "assertion_file": jwt, "authorization_server": site.issuer(),
               "dpop": dpop})
    };
    config(&dir, &site.url(), entry_with(json!(true)));
    let out = cmd(&dir, &["login", "web"]).assert_exit(6);
    assert_contains(
        &out.stderr,
        "issued a Bearer token, not a DPoP-bound one",
    );
    assert!(!creds(&dir).exists() || entry(&dir).is_null());
    config(&dir, &site.url(), entry_with(json!("auto")));
    cmd(&dir, &["login", "web"]).assert_exit(0);
}

#[test]
fn dpop_nonces_at_the_token_endpoint_and_the_server() {
    let opts = MachineOptions {
        dpop_algs: Some(vec!["ES256".into()]),
        as_nonce: Some("as-nonce-1".into()),
        rs_nonce: Some("rs-nonce-1".into()),
        ..Default::default()
    };
    let (dir, site) = dpop_site("machine_dpop_nonce", opts);
    cmd(&dir, &["login", "web"]).assert_exit(0);
    let t = site.token_requests();
    assert_eq!(t.len(), 2, "{}", site.summary());
    assert_eq!(t[0].status, Some(400));
    assert!(proof_claims(&t[0]).get("nonce").is_none());
    assert_eq!(proof_claims(&t[1])["nonce"], "as-nonce-1");
    cmd(&dir, &["list", "web"]).assert_exit(0);
    let mcp = site.mcp_requests();
    assert_eq!(mcp[0].status, Some(401));
    assert_eq!(proof_claims(&mcp[1])["nonce"], "rs-nonce-1");
    // Kept for the command's life: one 401 only.
    assert_eq!(
        mcp.iter().filter(|r| r.status == Some(401)).count(),
        1,
        "{}",
        site.summary()
    );
    assert!(mcp[1..].iter().all(|r| proof_claims(r)["nonce"] == "rs-nonce-1"));
}

#[test]
fn a_dpop_nonce_loop_ends_after_one_retry() {
    let opts = MachineOptions {
        dpop_algs: Some(vec!["ES256".into()]),
        rs_nonce_loop: true,
        ..Default::default()
    };
    let (dir, site) = dpop_site("machine_dpop_nonce_loop", opts);
    cmd(&dir, &["login", "web"]).assert_exit(0);
    let out = cmd(&dir, &["list", "web"]).assert_exit(6);
    assert_contains(&last_line(&out), "authentication required (HTTP 401)");
    assert_eq!(site.mcp_requests().len(), 2, "{}", site.summary());
}

#[test]
fn a_dpop_nonce_loop_at_the_token_endpoint_ends_after_one_retry() {
    let opts = MachineOptions {
        dpop_algs: Some(vec!["ES256".into()]),
        as_nonce_loop: true,
        ..Default::default()
    };
    let (dir, site) = dpop_site("machine_dpop_as_nonce_loop", opts);
    let out = cmd(&dir, &["login", "web"]).assert_exit(6);
    assert_contains(&last_line(&out), "answered HTTP 400: use_dpop_nonce");
    let t = site.token_requests();
    assert_eq!(t.len(), 2, "{}", site.summary());
    assert_eq!(proof_claims(&t[1])["nonce"], "as-loop-1");
    assert!(!creds(&dir).exists());
}

/// The form of token request `i`.
fn token_form(
    site: &MachineSite,
    i: usize,
) -> (Request, Vec<(String, String)>) {
    let t = site.token_requests();
    assert!(t.len() > i, "{}", site.summary());
    let f = form_decode(&t[i].body);
    (t[i].clone(), f)
}

#[test]
fn login_refresh_signs_a_new_assertion_and_proves_with_the_same_key() {
    // private_key_jwt and DPoP at once: the refresh authenticates with a
    // fresh client assertion and proves possession of the key the token
    // was bound to at login.
    let opts = MachineOptions {
        signing_algs: Some(vec!["ES256".into()]),
        dpop_algs: Some(vec!["ES256".into()]),
        refresh_tokens: true,
        ..Default::default()
    };
    let (dir, site) = site("machine_refresh", opts, json!({}));
    let pem = key_pem("p256.pem");
    let key = write_key(&dir, "client.pem", pem.as_bytes(), 0o600);
    config(
        &dir,
        &site.url(),
        json!({"client_id": CLIENT, "grant": "client_credentials",
               "client_key_file": key, "authorization_server": site.issuer(),
               "dpop": true}),
    );
    cmd(&dir, &["login", "web"]).assert_exit(0);
    let bound_key = entry(&dir)["dpop_key"].clone();
    assert!(bound_key.is_string());
    assert_eq!(entry(&dir)["refresh_token"], "rt-1");
    cmd(&dir, &["login", "web", "--refresh"]).assert_exit(0);
    let (first, _) = token_form(&site, 0);
    let (t, f) = token_form(&site, 1);
    assert_eq!(param(&f, "grant_type"), "refresh_token");
    assert_eq!(param(&f, "refresh_token"), "rt-1");
    let jwt = param(&f, "client_assertion");
    assert!(verify_with_p256(jwt, &pem), "a fresh, valid assertion");
    check_assertion_claims(jwt, &site.issuer());
    let jti = |r: &Request| proof_claims(r)["jti"].clone();
    assert_ne!(jti(&t), jti(&first), "a fresh proof");
    let jwk = |r: &Request| {
        let h: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(r.header("dpop").unwrap().split('.').next().unwrap())
                .unwrap(),
        )
        .unwrap();
        jwk_thumbprint(&h["jwk"])
    };
    assert_eq!(jwk(&t), jwk(&first), "the same key as at login");
    let e = entry(&dir);
    assert_eq!(e["access_token"], "dpop-at-2");
    assert_eq!(e["refresh_token"], "rt-2");
    assert_eq!(e["dpop_key"], bound_key);
    cmd(&dir, &["call", "web", "echo", "text=hi", "--yes"]).assert_exit(0);
}

#[test]
fn the_device_grant_signs_client_assertions_and_binds_with_dpop() {
    // The device grant (RFC 8628) composes with private_key_jwt and DPoP:
    // the device authorization request and the poll each carry a fresh
    // client assertion, the poll a DPoP proof, and the token is bound to
    // its key.
    let opts = MachineOptions {
        signing_algs: Some(vec!["ES256".into()]),
        dpop_algs: Some(vec!["ES256".into()]),
        device: true,
        ..Default::default()
    };
    let (dir, site) = site("machine_device", opts, json!({}));
    let pem = key_pem("p256.pem");
    let key = write_key(&dir, "client.pem", pem.as_bytes(), 0o600);
    config(
        &dir,
        &site.url(),
        json!({"client_id": CLIENT, "client_key_file": key,
               "authorization_server": site.issuer(), "dpop": true}),
    );
    let out = cmd(&dir, &["login", "web", "--device", "--timeout", "20"])
        .assert_exit(0);
    assert_contains(&out.stderr, USER_CODE);
    assert_contains(&out.stdout, "logged in to 'web'");
    let d = site.device_requests();
    assert_eq!(d.len(), 1, "{}", site.summary());
    let f = form_decode(&d[0].body);
    assert_eq!(param(&f, "client_id"), CLIENT);
    assert_eq!(param(&f, "resource"), site.url());
    assert_eq!(param(&f, "code_challenge_method"), "S256");
    let first = param(&f, "client_assertion").to_string();
    assert!(verify_with_p256(&first, &pem), "the assertion verifies");
    check_assertion_claims(&first, &site.issuer());
    let (t, f) = one_token_request(&site);
    assert_eq!(
        param(&f, "grant_type"),
        "urn:ietf:params:oauth:grant-type:device_code"
    );
    assert_eq!(param(&f, "device_code"), "dc-1");
    let jwt = param(&f, "client_assertion");
    assert!(verify_with_p256(jwt, &pem), "the poll's assertion verifies");
    check_assertion_claims(jwt, &site.issuer());
    assert_ne!(jwt, first, "a fresh assertion for each request");
    assert!(f.iter().all(|(k, _)| k != "client_secret"));
    let c = proof_claims(&t);
    assert_eq!(c["htu"], format!("{}/token", site.issuer()));
    let e = entry(&dir);
    assert_eq!(e["access_token"], "dpop-at-1");
    assert_eq!(e["auth_method"], "private_key_jwt");
    assert!(e["dpop_key"].is_string());
    // The bound token is used with a proof of its key (the site refuses
    // it otherwise).
    cmd(&dir, &["call", "web", "echo", "text=hi", "--yes"]).assert_exit(0);
    let mcp = site.mcp_requests();
    assert!(!mcp.is_empty());
    assert!(
        mcp.iter()
            .all(|r| r.header("authorization") == Some("DPoP dpop-at-1")),
        "{}",
        site.summary()
    );
}
