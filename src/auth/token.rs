//! Token requests: the authorization-code exchange (and, for the explicit
//! `login --refresh`, the refresh grant).
//!
//! A form POST to the token endpoint, never following a redirect. The
//! answer must be JSON with `access_token` and a `token_type` of Bearer
//! (compared case-insensitively); anything else is an error and nothing is
//! stored. A client secret, when configured, is sent by the method the
//! authorization server supports (`client_secret_basic`, else
//! `client_secret_post`).

use base64::Engine;
use serde_json::Value;

use super::callback::{encode, form};
use super::pkce::Secret;
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

/// How the client authenticates at the token endpoint.
#[derive(Debug)]
pub(crate) struct Client<'a> {
    pub(crate) id: &'a str,
    pub(crate) secret: Option<&'a Secret>,
    /// `none`, `client_secret_basic` or `client_secret_post`.
    pub(crate) method: &'a str,
}

/// POSTs `params` (plus the client's credentials) to the token endpoint.
pub(crate) fn request(
    endpoint: &Url,
    client: &Client<'_>,
    params: &[(&str, &str)],
    deadline: &Deadline,
) -> Result<Tokens> {
    let mut pairs: Vec<(&str, &str)> = params.to_vec();
    let mut headers = vec![("accept", "application/json".to_string())];
    match (client.secret, client.method) {
        (Some(secret), "client_secret_basic") => {
            // RFC 6749 §2.3.1: form-encode both parts, then Basic.
            let raw =
                format!("{}:{}", encode(client.id), encode(secret.expose()));
            let b64 = base64::engine::general_purpose::STANDARD.encode(raw);
            headers.push(("authorization", format!("Basic {b64}")));
        }
        (Some(secret), "client_secret_post") => {
            pairs.push(("client_id", client.id));
            pairs.push(("client_secret", secret.expose()));
        }
        _ => pairs.push(("client_id", client.id)),
    }
    let body = form(&pairs).into_bytes();
    let what = format!("token endpoint {endpoint}");
    let a = net::request(
        "POST",
        endpoint,
        &headers,
        Some(("application/x-www-form-urlencoded", body)),
        deadline,
    )?;
    if let Some(e) = a.redirect_error(&what) {
        return Err(e);
    }
    if a.status != 200 {
        let detail = serde_json::from_slice::<Value>(&a.body)
            .ok()
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
        return Err(Error::new(
            Kind::Auth,
            format!("{what} answered HTTP {}{detail}", a.status),
        ));
    }
    let m = a.json_object(&what)?;
    let token_type = m.get("token_type").and_then(Value::as_str).unwrap_or("");
    if !token_type.eq_ignore_ascii_case("bearer") {
        return Err(Error::server(format!(
            "{what}: token_type is '{}', not Bearer; nothing stored",
            term::clip(&term::line(token_type), 50)
        )));
    }
    let access = m
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| {
            !t.is_empty() && t.bytes().all(|b| (0x21..0x7f).contains(&b))
        })
        .ok_or_else(|| {
            Error::server(format!(
                "{what}: no usable access_token; nothing stored"
            ))
        })?;
    Ok(Tokens {
        access_token: Secret::new(access.to_string()),
        refresh_token: m
            .get("refresh_token")
            .and_then(Value::as_str)
            .map(|r| Secret::new(r.to_string())),
        expires_in: expires_in(m.get("expires_in")),
        scope: m.get("scope").and_then(Value::as_str).map(str::to_string),
    })
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
                auth_method: None,
                resource: None,
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
