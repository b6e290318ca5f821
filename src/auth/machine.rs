//! The grants of machines without a browser, beside `client_credentials`
//! (in `flow`): workload identity and enterprise-managed authorization.
//!
//! Workload identity (SEP-1933, RFC 7523 §2.1): the job's platform hands
//! it a JWT (a CI OIDC token, a Kubernetes service-account token) in a
//! file or an environment variable the config names; that JWT is the
//! grant (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`). A
//! refusal is final: no retry, no other grant.
//!
//! Enterprise-managed authorization (SEP-990): the user's ID token from
//! the enterprise identity provider (from a file or a variable, likewise)
//! is exchanged there (RFC 8693) for an identity assertion grant (ID-JAG)
//! addressed to the MCP server's authorization server, which the client
//! then presents there as a jwt-bearer grant.
//!
//! An assertion is read bounded, must be a compact JWT (a base64url JSON
//! header and claims, a base64url signature), and its `exp`, when there
//! is one, must be a non-negative integer and not past: a clear error
//! naming its source, before anything is sent. A workload's assertion must
//! also be addressed (`aud`) to the authorization server it is sent to
//! (its issuer, or its token endpoint, RFC 7523 §3), so that a token the
//! platform minted for another audience is never handed to this one.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

use super::dpop::Dpop;
use super::pkce::Secret;
use super::token::{self, AuthMethod, Client, Tokens};
use super::{jose, store};
use crate::config::{Assertion, Enterprise};
use crate::deadline::Deadline;
use crate::error::{Error, Kind, Result};
use crate::journal;
use crate::urlcheck::Url;

/// The jwt-bearer grant type (RFC 7523 §2.1).
pub(crate) const JWT_BEARER: &str =
    "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The largest assertion read: JWTs from platforms are a few KiB.
const MAX_ASSERTION: u64 = 64 * 1024;

/// Where the assertion comes from, for messages.
fn source_name(a: &Assertion) -> String {
    match a {
        Assertion::File(p) => format!("assertion file {}", p.display()),
        Assertion::Env(v) => format!("environment variable '{v}'"),
    }
}

/// Reads a platform's file: a regular file (a symbolic link is followed:
/// platforms rotate tokens by swapping links), at most [`MAX_ASSERTION`]
/// bytes. Its mode is the platform's business, not ours.
fn read_file(p: &Path, what: &str) -> Result<String> {
    // O_NONBLOCK: a FIFO must not block the open (it is refused below).
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(p)
        .map_err(|e| Error::refused(format!("{what}: cannot open: {e}")))?;
    let meta =
        f.metadata().map_err(|e| Error::refused(format!("{what}: {e}")))?;
    if !meta.is_file() {
        return Err(Error::refused(format!("{what} is not a regular file")));
    }
    let mut bytes = Vec::new();
    f.take(MAX_ASSERTION + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::refused(format!("{what}: {e}")))?;
    if bytes.len() as u64 > MAX_ASSERTION {
        return Err(Error::refused(format!(
            "{what} is larger than {MAX_ASSERTION} bytes; not a JWT"
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| Error::refused(format!("{what} is not text; not a JWT")))
}

/// The assertion from its source: present, a compact JWT, not expired.
pub(crate) fn read_assertion(
    a: &Assertion,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Secret> {
    let what = source_name(a);
    let raw = match a {
        Assertion::File(p) => read_file(p, &what)?,
        Assertion::Env(v) => lookup(v).unwrap_or_default(),
    };
    let jwt = raw.trim();
    if jwt.is_empty() {
        return Err(Error::refused(format!(
            "{what} holds no assertion (it is empty or not set)"
        )));
    }
    let claims = shape(jwt).map_err(|why| {
        Error::refused(format!("{what} does not hold a JWT: {why}"))
    })?;
    let exp = match claims.get("exp") {
        None => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            Error::refused(format!(
                "the assertion in {what} has an 'exp' that is not a \
                 non-negative integer (seconds since 1970)"
            ))
        })?),
    };
    if let Some(exp) = exp
        && exp <= store::now()
    {
        return Err(Error::new(
            Kind::Auth,
            format!(
                "the assertion in {what} expired at {} (exp); the platform \
                 must hand the job a fresh one",
                journal::timestamp(
                    std::time::UNIX_EPOCH
                        + std::time::Duration::from_secs(exp)
                )
            ),
        ));
    }
    Ok(Secret::new(jwt.to_string()))
}

/// The claims of a compact JWT whose three parts are well formed: a
/// base64url JSON object (header), a base64url JSON object (claims), a
/// non-empty base64url signature; otherwise why not.
pub(crate) fn shape(
    jwt: &str,
) -> std::result::Result<Map<String, Value>, &'static str> {
    let parts: Vec<&str> = jwt.split('.').collect();
    let [header, _, signature] = parts[..] else {
        return Err("a JWT has three base64url parts separated by '.'");
    };
    let object = |part: &str| {
        let bytes = URL_SAFE_NO_PAD.decode(part).ok()?;
        match serde_json::from_slice(&bytes).ok()? {
            Value::Object(m) => Some(m),
            _ => None,
        }
    };
    if object(header).is_none() {
        return Err("its header is not a base64url JSON object");
    }
    let claims = jose::claims(jwt)
        .ok_or("its claims are not a base64url JSON object")?;
    if signature.is_empty() || URL_SAFE_NO_PAD.decode(signature).is_err() {
        return Err("its signature is not base64url");
    }
    Ok(claims)
}

/// Whether a JWT's `aud` (a string or an array of strings) names the
/// authorization server: its issuer as published (or the same URL,
/// canonically), or its token endpoint. Without an issuer (endpoints the
/// operator configured), the token endpoint or its origin.
pub(crate) fn addressed_to(
    claims: &Map<String, Value>,
    issuer: Option<&str>,
    token: &Url,
) -> bool {
    let auds: Vec<&str> = match claims.get("aud") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    let same = |a: &str, b: &str| {
        a == b
            || matches!((Url::parse(a), Url::parse(b)), (Ok(x), Ok(y)) if x == y)
    };
    auds.iter().any(|a| {
        same(a, &token.to_string())
            || match issuer {
                Some(i) => same(a, i),
                None => Url::parse(a).is_ok_and(|u| {
                    u.origin() == token.origin()
                        && u.path.trim_end_matches('/').is_empty()
                }),
            }
    })
}

/// Refuses a workload assertion not addressed to this authorization
/// server, before it is sent.
pub(crate) fn check_audience(
    a: &Assertion,
    assertion: &Secret,
    issuer: Option<&str>,
    token: &Url,
) -> Result<()> {
    let claims = jose::claims(assertion.expose()).unwrap_or_default();
    if addressed_to(&claims, issuer, token) {
        return Ok(());
    }
    let aud = match claims.get("aud") {
        None => "no 'aud'".to_string(),
        Some(v) => format!(
            "'aud' {}",
            crate::term::clip(&crate::term::line(&v.to_string()), 200)
        ),
    };
    Err(Error::refused(format!(
        "the assertion in {} has {aud}, which does not name the \
         authorization server it would be sent to ({}); not sent",
        source_name(a),
        issuer.map_or_else(|| token.to_string(), str::to_string)
    )))
}

/// The jwt-bearer grant at `endpoint` with `assertion`, for `resource`
/// and `scope`. One request: a refusal is the answer.
pub(crate) fn jwt_bearer(
    endpoint: &Url,
    client: &Client<'_>,
    assertion: &Secret,
    scope: Option<&str>,
    resource: &str,
    dpop: Option<&Dpop>,
    d: &Deadline,
) -> Result<Tokens> {
    let mut params =
        vec![("grant_type", JWT_BEARER), ("assertion", assertion.expose())];
    if let Some(s) = scope {
        params.push(("scope", s));
    }
    params.push(("resource", resource));
    token::request(endpoint, client, &params, dpop, d)
}

/// SEP-990, first half: exchanges the ID token at the identity provider
/// for an ID-JAG addressed to `audience` (the authorization server's
/// issuer) for `resource`.
pub(crate) fn id_jag(
    idp: &Enterprise,
    id_token: &Secret,
    audience: &str,
    resource: &str,
    scope: Option<&str>,
    lookup: &dyn Fn(&str) -> Option<String>,
    d: &Deadline,
) -> Result<Secret> {
    let secret = match &idp.client_secret_env_var {
        Some(v) => Some(lookup(v).filter(|s| !s.is_empty()).map(Secret::new).ok_or_else(|| {
            Error::refused(format!(
                "environment variable '{v}' (idp_client_secret_env_var) is not set or empty"
            ))
        })?),
        None => None,
    };
    let id = idp.client_id.as_deref().unwrap_or("");
    let method = if secret.is_some() {
        AuthMethod::ClientSecretBasic
    } else {
        AuthMethod::None
    };
    let client = Client::new(id, secret.as_ref(), method);
    let mut params = vec![
        ("grant_type", TOKEN_EXCHANGE),
        ("requested_token_type", ID_JAG),
        ("audience", audience),
        ("resource", resource),
        ("subject_token", id_token.expose()),
        ("subject_token_type", ID_TOKEN),
    ];
    if let Some(s) = scope {
        params.push(("scope", s));
    }
    token::exchange(&idp.token_endpoint, &client, &params, ID_JAG, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn jwt(claims: serde_json::Value) -> String {
        jose::compact(
            &jose::signing_input(&json!({"alg": "ES256"}), &claims),
            b"s",
        )
    }

    #[test]
    fn assertions_are_checked_before_anything_is_sent() {
        let env = |v: &'static str| move |_: &str| Some(v.to_string());
        let a = Assertion::Env("CI_TOKEN".into());
        let e = read_assertion(&a, &|_| None).unwrap_err().to_string();
        assert!(
            e.contains("environment variable 'CI_TOKEN' holds no assertion"),
            "{e}"
        );
        let e = read_assertion(&a, &env("not a jwt")).unwrap_err().to_string();
        assert!(e.contains("does not hold a JWT"), "{e}");
        for exp in [json!("9999999999"), json!(-1), json!(1.5), json!(null)] {
            let bad = jwt(json!({"exp": exp}));
            let e =
                read_assertion(&a, &move |_| Some(bad.clone())).unwrap_err();
            assert_eq!(e.kind(), Kind::Refused);
            assert!(
                e.to_string().contains("not a non-negative integer"),
                "{e}"
            );
        }
        let old = jwt(json!({"exp": 1000}));
        let e = read_assertion(&a, &move |_| Some(old.clone())).unwrap_err();
        assert!(e.to_string().contains("expired at"), "{e}");
        let ok = jwt(json!({"exp": store::now() + 60}));
        let got =
            read_assertion(&a, &move |_| Some(format!("{ok}\n"))).unwrap();
        assert_eq!(got.expose().matches('.').count(), 2);
        let dir = std::env::temp_dir()
            .join(format!("rivumi-assert-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big");
        std::fs::write(&big, vec![b'a'; 200 * 1024]).unwrap();
        let e = read_assertion(&Assertion::File(big), &|_| None).unwrap_err();
        assert!(e.to_string().contains("larger than 65536 bytes"), "{e}");
        let e = read_assertion(&Assertion::File(dir.join("none")), &|_| None)
            .unwrap_err();
        assert!(e.to_string().contains("cannot open"), "{e}");
        let e = read_assertion(&Assertion::File(dir.clone()), &|_| None)
            .unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_three_parts_must_be_well_formed() {
        let good = jwt(json!({"sub": "x"}));
        assert!(shape(&good).is_ok());
        let (input, _) = good.rsplit_once('.').unwrap();
        for (bad, why) in [
            (format!("{input}."), "signature"),
            (format!("{input}.a+b/"), "signature"),
            (format!("{input}.c2ln="), "signature"),
            (
                format!(
                    "bm90IGpzb24.{}",
                    &input[input.find('.').unwrap() + 1..]
                ) + ".c2ln",
                "header",
            ),
            (format!("{input}.c2ln.c2ln"), "three"),
            ("a.b".to_string(), "three"),
        ] {
            let e = shape(&bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn the_audience_must_name_the_authorization_server() {
        let token = Url::parse("https://as.example/oauth/token").unwrap();
        let c = |aud: Value| jose::claims(&jwt(json!({"aud": aud}))).unwrap();
        let iss = Some("https://as.example");
        assert!(addressed_to(&c(json!("https://as.example")), iss, &token));
        assert!(addressed_to(&c(json!("https://as.example/")), iss, &token));
        assert!(addressed_to(
            &c(json!(["x", "https://as.example/oauth/token"])),
            iss,
            &token
        ));
        assert!(!addressed_to(
            &c(json!("https://other.example")),
            iss,
            &token
        ));
        assert!(!addressed_to(&c(json!("sts.amazonaws.com")), iss, &token));
        assert!(!addressed_to(
            &c(json!(["https://as.example.evil"])),
            iss,
            &token
        ));
        assert!(!addressed_to(&Map::new(), iss, &token));
        // Configured endpoints, no issuer: the token endpoint or its origin.
        assert!(addressed_to(&c(json!("https://as.example")), None, &token));
        assert!(!addressed_to(
            &c(json!("https://as.example/x")),
            None,
            &token
        ));
    }
}
