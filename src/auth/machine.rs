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
//! An assertion is read bounded, must look like a compact JWT and, when
//! it says when it expires, must not have expired: a clear error naming
//! its source, before anything is sent.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

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
    let Some(claims) = jose::claims(jwt) else {
        return Err(Error::refused(format!(
            "{what} does not hold a JWT (three base64url parts, JSON claims)"
        )));
    };
    if let Some(exp) = claims.get("exp").and_then(serde_json::Value::as_u64)
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
}
