//! Token requests: every grant's (the authorization-code exchange, client
//! credentials, jwt-bearer, the refresh of `login --refresh`) and the RFC
//! 8693 token exchange at an enterprise identity provider.
//!
//! A form POST to the token endpoint, never following a redirect. The
//! answer must be JSON with `access_token` and a `token_type` of Bearer
//! (compared case-insensitively), or DPoP when the request carried a DPoP
//! proof; anything else is an error and nothing is stored. A client
//! secret, when configured, is sent by the method the authorization server
//! supports (`client_secret_basic`, else `client_secret_post`); a client
//! key signs a fresh `private_key_jwt` assertion for every request.

use base64::Engine;
use serde_json::{Map, Value, json};

use super::callback::{encode, form};
use super::dpop::Dpop;
use super::keys::SigningKey;
use super::pkce::Secret;
use super::{jose, store};
use crate::deadline::Deadline;
use crate::error::{Error, Kind, Result};
use crate::urlcheck::Url;
use crate::{net, term};

/// A token endpoint's answer.
#[derive(Debug)]
pub(crate) struct Tokens {
    pub(crate) access_token: Secret,
    pub(crate) refresh_token: Option<Secret>,
    /// `expires_in` as sent: zero or negative means already expired.
    pub(crate) expires_in: Option<i64>,
    pub(crate) scope: Option<String>,
    /// A DPoP-bound token (`token_type` DPoP): never sent as Bearer.
    pub(crate) dpop: bool,
}

/// When an access token with this `expires_in` expires, in unix seconds,
/// for a token obtained at `now`. An `expires_in` of zero or less is a
/// token that has already expired (it expires at `now`, and [`expired`]
/// holds from then on), never one without an expiry.
///
/// [`expired`]: super::store::Credential::expired
pub(crate) fn expires_at(expires_in: Option<i64>, now: u64) -> Option<u64> {
    expires_in.map(|s| match u64::try_from(s) {
        Ok(s) if s > 0 => now.saturating_add(s),
        _ => now,
    })
}

/// `expires_in` of a token answer: an integer (a JSON number, also one
/// with a fraction, or a string of digits as some servers send it); a
/// fraction rounds down, so `0.5` is already expired.
fn expires_in(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_u64().map(|_| i64::MAX))
            .or_else(|| n.as_f64().map(|f| f.floor() as i64)),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    }
}

/// How a client authenticates at the token endpoint (the
/// `token_endpoint_auth_method` names of RFC 7591 and RFC 8414). Each
/// place that acts on the method matches on this, so a new method is a
/// compile error until each says what it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthMethod {
    /// A public client: its `client_id` only.
    None,
    /// The secret in HTTP Basic (RFC 6749 §2.3.1).
    ClientSecretBasic,
    /// The secret as a form field.
    ClientSecretPost,
    /// A signed client assertion (RFC 7523).
    PrivateKeyJwt,
}

impl AuthMethod {
    const ALL: [AuthMethod; 4] = [
        AuthMethod::None,
        AuthMethod::ClientSecretBasic,
        AuthMethod::ClientSecretPost,
        AuthMethod::PrivateKeyJwt,
    ];

    /// The method's registered name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// The method of a registered name; `None` for one rivumi-mcp does
    /// not speak.
    pub(crate) fn parse(s: &str) -> Option<AuthMethod> {
        AuthMethod::ALL.into_iter().find(|m| m.name() == s)
    }

    /// Whether `listed` (a metadata list of names) has this method.
    pub(crate) fn listed_in(self, listed: &[String]) -> bool {
        listed.iter().any(|m| m == self.name())
    }
}

/// How the client authenticates at the token endpoint.
#[derive(Debug)]
pub(crate) struct Client<'a> {
    pub(crate) id: &'a str,
    pub(crate) secret: Option<&'a Secret>,
    pub(crate) method: AuthMethod,
    /// For `private_key_jwt`: the key that signs the client assertion.
    pub(crate) key: Option<&'a SigningKey>,
    /// The assertion's audience: the authorization server's issuer, else
    /// its token endpoint (RFC 7523 §3).
    pub(crate) audience: Option<&'a str>,
}

impl<'a> Client<'a> {
    /// A client that authenticates by `method` with `secret`.
    pub(crate) fn new(
        id: &'a str,
        secret: Option<&'a Secret>,
        method: AuthMethod,
    ) -> Client<'a> {
        Client { id, secret, method, key: None, audience: None }
    }
}

/// The `client_assertion_type` of `private_key_jwt` (RFC 7523 §2.2).
const ASSERTION_TYPE: &str =
    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// The longest life of a client assertion, in seconds.
const ASSERTION_LIFE: u64 = 300;

/// A `private_key_jwt` client assertion (RFC 7523 §2.2, §3): iss = sub =
/// the client, aud = the authorization server, a fresh `jti`, and an `exp`
/// five minutes after `iat`.
fn client_assertion(client: &Client<'_>, endpoint: &Url) -> Result<String> {
    let key = client.key.ok_or_else(|| {
        Error::usage("private_key_jwt needs a key ('client_key_file')")
    })?;
    let now = store::now();
    let claims = json!({
        "iss": client.id,
        "sub": client.id,
        "aud": client.audience.map(str::to_string).unwrap_or_else(|| endpoint.to_string()),
        "jti": jose::jti()?,
        "iat": now,
        "exp": now + ASSERTION_LIFE,
    });
    key.jwt(json!({"typ": "JWT"}), &claims)
}

/// POSTs `params` (plus the client's credentials) to the token endpoint
/// and returns the tokens. With `dpop`, the request carries a proof, and
/// a `DPoP` token type is accepted.
pub(crate) fn request(
    endpoint: &Url,
    client: &Client<'_>,
    params: &[(&str, &str)],
    dpop: Option<&Dpop>,
    deadline: &Deadline,
) -> Result<Tokens> {
    let m = post(endpoint, client, params, dpop, deadline)?;
    tokens_of(&m, endpoint, dpop)
}

/// [`request`], with an error answer handed back as it is, so that the
/// caller can act on its `error` code (the polling of the device grant).
pub(crate) fn attempt(
    endpoint: &Url,
    client: &Client<'_>,
    params: &[(&str, &str)],
    dpop: Option<&Dpop>,
    deadline: &Deadline,
) -> Result<std::result::Result<Tokens, Refusal>> {
    let what = format!("token endpoint {endpoint}");
    match send(&what, endpoint, client, params, dpop, deadline)? {
        Ok(m) => Ok(Ok(tokens_of(&m, endpoint, dpop)?)),
        Err(r) => Ok(Err(r)),
    }
}

/// The tokens of a successful answer `m` from `endpoint`.
fn tokens_of(
    m: &Map<String, Value>,
    endpoint: &Url,
    dpop: Option<&Dpop>,
) -> Result<Tokens> {
    let what = format!("token endpoint {endpoint}");
    let token_type = m.get("token_type").and_then(Value::as_str).unwrap_or("");
    let bound = dpop.is_some() && token_type.eq_ignore_ascii_case("dpop");
    if !bound && !token_type.eq_ignore_ascii_case("bearer") {
        return Err(Error::server(format!(
            "{what}: token_type is '{}', not {}; nothing stored",
            term::clip(&term::line(token_type), 50),
            if dpop.is_some() { "DPoP or Bearer" } else { "Bearer" }
        )));
    }
    Ok(Tokens {
        access_token: access_token(m, &what)?,
        refresh_token: m
            .get("refresh_token")
            .and_then(Value::as_str)
            .map(|r| Secret::new(r.to_string())),
        expires_in: expires_in(m.get("expires_in")),
        scope: m.get("scope").and_then(Value::as_str).map(str::to_string),
        dpop: bound,
    })
}

/// The RFC 8693 token exchange: POSTs `params` and returns the issued
/// token, which must be of `issued_type`.
pub(crate) fn exchange(
    endpoint: &Url,
    client: &Client<'_>,
    params: &[(&str, &str)],
    issued_type: &str,
    deadline: &Deadline,
) -> Result<Secret> {
    let what = format!("token endpoint {endpoint}");
    let m = post(endpoint, client, params, None, deadline)?;
    let issued =
        m.get("issued_token_type").and_then(Value::as_str).unwrap_or("");
    if issued != issued_type {
        return Err(Error::server(format!(
            "{what}: issued_token_type is '{}', not {issued_type}",
            term::clip(&term::line(issued), 80)
        )));
    }
    access_token(&m, &what)
}

/// The answer's `access_token`: non-empty visible ASCII.
fn access_token(m: &Map<String, Value>, what: &str) -> Result<Secret> {
    m.get("access_token")
        .and_then(Value::as_str)
        .filter(|t| {
            !t.is_empty() && t.bytes().all(|b| (0x21..0x7f).contains(&b))
        })
        .map(|t| Secret::new(t.to_string()))
        .ok_or_else(|| {
            Error::server(format!(
                "{what}: no usable access_token; nothing stored"
            ))
        })
}

/// An error answer of an OAuth endpoint: its `error` code, and the error
/// to report (the code and description sanitised, or a snippet).
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) code: Option<String>,
    pub(crate) error: Error,
}

/// The token request itself, [`send`] with an error answer as an error.
fn post(
    endpoint: &Url,
    client: &Client<'_>,
    params: &[(&str, &str)],
    dpop: Option<&Dpop>,
    deadline: &Deadline,
) -> Result<Map<String, Value>> {
    let what = format!("token endpoint {endpoint}");
    send(&what, endpoint, client, params, dpop, deadline)?.map_err(|r| r.error)
}

/// A form POST of `params` to an OAuth endpoint (`what` names it in
/// errors) with the client's authentication and a DPoP proof (sent once
/// more, with the nonce, after `use_dpop_nonce`): the answer's JSON
/// object, or the endpoint's refusal.
pub(crate) fn send(
    what: &str,
    endpoint: &Url,
    client: &Client<'_>,
    params: &[(&str, &str)],
    dpop: Option<&Dpop>,
    deadline: &Deadline,
) -> Result<std::result::Result<Map<String, Value>, Refusal>> {
    let mut retried = false;
    loop {
        let mut pairs: Vec<(&str, &str)> = params.to_vec();
        let mut headers = vec![("accept", "application/json".to_string())];
        let assertion;
        match (client.secret, client.method) {
            (Some(secret), AuthMethod::ClientSecretBasic) => {
                // RFC 6749 §2.3.1: form-encode both parts, then Basic.
                let raw = format!(
                    "{}:{}",
                    encode(client.id),
                    encode(secret.expose())
                );
                let b64 =
                    base64::engine::general_purpose::STANDARD.encode(raw);
                headers.push(("authorization", format!("Basic {b64}")));
            }
            (Some(secret), AuthMethod::ClientSecretPost) => {
                pairs.push(("client_id", client.id));
                pairs.push(("client_secret", secret.expose()));
            }
            (_, AuthMethod::PrivateKeyJwt) => {
                // A new assertion each time: its jti is single-use.
                assertion = client_assertion(client, endpoint)?;
                pairs.push(("client_id", client.id));
                pairs.push(("client_assertion_type", ASSERTION_TYPE));
                pairs.push(("client_assertion", &assertion));
            }
            // Without a client id (an IdP that needs none), nothing.
            (_, AuthMethod::None)
            | (None, AuthMethod::ClientSecretBasic)
            | (None, AuthMethod::ClientSecretPost)
                if client.id.is_empty() => {}
            (_, AuthMethod::None)
            | (None, AuthMethod::ClientSecretBasic)
            | (None, AuthMethod::ClientSecretPost) => {
                pairs.push(("client_id", client.id))
            }
        }
        if let Some(d) = dpop {
            headers
                .push(("dpop", d.proof("POST", &endpoint.to_string(), None)?));
        }
        let body = form(&pairs).into_bytes();
        let a = net::request(
            "POST",
            endpoint,
            &headers,
            Some(("application/x-www-form-urlencoded", body)),
            deadline,
        )?;
        if let Some(e) = a.redirect_error(what) {
            return Err(e);
        }
        if a.status == 200 {
            return a.json_object(what).map(Ok);
        }
        let error = serde_json::from_slice::<Value>(&a.body).ok();
        let code = error.as_ref().and_then(|v| v.get("error")?.as_str());
        // RFC 9449 §8: the server wants a nonce; one more try with it.
        if let (Some(d), Some("use_dpop_nonce"), 400) = (dpop, code, a.status)
        {
            let fresh =
                d.take_nonce(&endpoint.to_string(), a.dpop_nonce.as_deref())?;
            if fresh && !retried {
                retried = true;
                continue;
            }
        }
        let detail = error
            .as_ref()
            .and_then(|v| {
                let e = v.get("error")?.as_str()?.to_string();
                let d = v
                    .get("error_description")
                    .and_then(Value::as_str)
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default();
                Some(format!("{e}{d}"))
            })
            .map(|t| format!(": {}", term::clip(&term::line(&t), 300)))
            .unwrap_or_else(|| a.snippet());
        return Ok(Err(Refusal {
            code: code.map(str::to_string),
            error: Error::new(
                Kind::Auth,
                format!("{what} answered HTTP {}{detail}", a.status),
            ),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `expires_at` for a token answer's `expires_in` of `v`, at 1000.
    fn at(v: Value) -> Option<u64> {
        expires_at(expires_in(Some(&v)), 1_000)
    }

    #[test]
    fn expires_in_of_zero_or_less_is_expired() {
        for v in [json!(0), json!(-1), json!(-9e18), json!(0.5), json!("-5")] {
            assert_eq!(at(v.clone()), Some(1_000), "{v}");
            let c = super::super::store::Credential {
                url: "u".into(),
                token_endpoint: "t".into(),
                issuer: None,
                client_id: "c".into(),
                access_token: Secret::new("a".into()),
                refresh_token: None,
                expires_at: at(v.clone()),
                scope: None,
                obtained_at: 1_000,
                registration: None,
                other_registrations: vec![],
                auth_method: None,
                resource: None,
                dpop_key: None,
            };
            assert!(c.expired(1_000), "{v}");
        }
        assert_eq!(at(json!(60)), Some(1_060));
        assert_eq!(at(json!("60")), Some(1_060));
        assert_eq!(at(json!(60.9)), Some(1_060));
        assert_eq!(at(json!(u64::MAX)), Some(1_000 + i64::MAX as u64));
        assert_eq!(at(json!(null)), None);
        assert_eq!(at(json!(true)), None);
    }
}
