//! The device authorization grant (RFC 8628): for a person whose browser
//! is on another device than rivumi-mcp (an SSH session, a container).
//!
//! The client asks the authorization server's
//! `device_authorization_endpoint` for a device code and a user code,
//! prints where to enter the user code (every string the server sent
//! shown sanitised: a verification URI is text from the network, and a
//! terminal escape in it would act on the operator's terminal), then polls
//! the token endpoint: at the server's `interval` (never faster than once
//! a second), five seconds slower after each `slow_down`, until a token,
//! `access_denied`, `expired_token`, the device code's own lifetime or the
//! login's deadline. No listener is opened. PKCE goes with it (a
//! discovered authorization server supports S256), as do `resource`, the
//! scopes and DPoP.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::dpop::Dpop;
use super::pkce::Secret;
use super::token::{self, Client, Tokens};
use crate::deadline::Deadline;
use crate::error::{Error, Kind, Result};
use crate::urlcheck::Url;
use crate::{msg, term};

/// The grant type of the token requests (RFC 8628 §3.4).
pub(crate) const GRANT_TYPE: &str =
    "urn:ietf:params:oauth:grant-type:device_code";

/// The polling interval when the server gives none (RFC 8628 §3.2).
const DEFAULT_INTERVAL: u64 = 5;
/// The fastest polling rivumi-mcp does, whatever the server says.
const MIN_INTERVAL: u64 = 1;
/// The slowest: an `interval` beyond this is taken as this.
const MAX_INTERVAL: u64 = 60;
/// What each `slow_down` adds (RFC 8628 §3.5).
const SLOW_DOWN: Duration = Duration::from_secs(5);
/// The longest string of the answer shown.
const MAX_SHOWN: usize = 500;

/// What the device authorization endpoint answered.
#[derive(Debug)]
pub(crate) struct Started {
    device_code: Secret,
    user_code: String,
    verification_uri: String,
    verification_uri_complete: Option<String>,
    expires_in: Duration,
    interval: Duration,
}

/// A required string of the answer `m`.
fn required(
    m: &serde_json::Map<String, Value>,
    key: &str,
    what: &str,
) -> Result<String> {
    m.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            Error::server(format!("{what}: the answer has no '{key}'"))
        })
}

/// A number of seconds of the answer, bounded.
fn seconds(v: Option<&Value>, default: u64, lo: u64, hi: u64) -> Duration {
    let n = v.and_then(Value::as_u64).unwrap_or(default);
    Duration::from_secs(n.clamp(lo, hi))
}

/// Asks `endpoint` for a device code: `params` are the client's (scope,
/// resource, the PKCE challenge), the client authenticates as at the
/// token endpoint.
pub(crate) fn start(
    endpoint: &Url,
    client: &Client<'_>,
    params: &[(&str, &str)],
    d: &Deadline,
) -> Result<Started> {
    let what = format!("device authorization endpoint {endpoint}");
    let m = token::send(&what, endpoint, client, params, None, d)?
        .map_err(|r| r.error)?;
    Ok(Started {
        device_code: Secret::new(required(&m, "device_code", &what)?),
        user_code: required(&m, "user_code", &what)?,
        verification_uri: required(&m, "verification_uri", &what)
            .or_else(|_| required(&m, "verification_url", &what))?,
        verification_uri_complete: m
            .get("verification_uri_complete")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        // A code that lives longer than a day is taken as living a day.
        expires_in: seconds(m.get("expires_in"), 600, 1, 86_400),
        interval: seconds(
            m.get("interval"),
            DEFAULT_INTERVAL,
            MIN_INTERVAL,
            MAX_INTERVAL,
        ),
    })
}

/// A string from the server as shown on the terminal: one line, escapes
/// made visible, bounded.
fn shown(s: &str) -> String {
    term::clip(&term::line(s), MAX_SHOWN).into_owned()
}

impl Started {
    /// What the person is told: where to go and which code to enter.
    pub(crate) fn instructions(&self, server: &str) -> String {
        let mut t = format!(
            "rivumi-mcp: to log in to '{server}', open this URL on any \
             device:\n\n  {}\n\nand enter the code:\n\n  {}\n",
            shown(&self.verification_uri),
            shown(&self.user_code)
        );
        if let Some(c) = &self.verification_uri_complete {
            t.push_str(&format!(
                "\n(or open this URL, which carries the code:\n\n  {}\n)\n",
                shown(c)
            ));
        }
        t
    }

    /// Polls the token endpoint until the person has decided, the device
    /// code expired or `timeout` passed. `params` are those of every
    /// poll besides the grant type and the device code (the PKCE
    /// verifier, the resource).
    pub(crate) fn poll(
        &self,
        endpoint: &Url,
        client: &Client<'_>,
        params: &[(&str, &str)],
        dpop: Option<&Dpop>,
        timeout: Duration,
    ) -> Result<Tokens> {
        let wait = Deadline::new("the device authorization", timeout);
        let expires = Instant::now() + self.expires_in;
        let mut interval = self.interval;
        let mut form: Vec<(&str, &str)> = vec![
            ("grant_type", GRANT_TYPE),
            ("device_code", self.device_code.expose()),
        ];
        form.extend_from_slice(params);
        loop {
            let left = wait.remaining()?;
            if Instant::now() + interval >= expires {
                return Err(expired());
            }
            if interval >= left {
                std::thread::sleep(left);
                return Err(wait.error());
            }
            std::thread::sleep(interval);
            let d = Deadline::new(
                "the token request",
                super::flow::REQUEST_TIMEOUT.min(wait.remaining()?),
            );
            let refusal =
                match token::attempt(endpoint, client, &form, dpop, &d)? {
                    Ok(tokens) => return Ok(tokens),
                    Err(r) => r,
                };
            match refusal.code.as_deref() {
                Some("authorization_pending") => {}
                Some("slow_down") => {
                    interval = (interval + SLOW_DOWN)
                        .min(Duration::from_secs(MAX_INTERVAL));
                    msg::debug(&format!(
                        "device authorization: slow_down; polling every {}s",
                        interval.as_secs()
                    ));
                }
                Some("access_denied") => {
                    return Err(Error::new(
                        Kind::Auth,
                        "the authorization was denied on the device page; \
                         nothing stored",
                    ));
                }
                Some("expired_token") => return Err(expired()),
                _ => return Err(refusal.error),
            }
        }
    }
}

fn expired() -> Error {
    Error::new(
        Kind::Auth,
        "the device code expired before the authorization was completed; \
         nothing stored (run login again)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn intervals_are_bounded() {
        let s = |v: Value| seconds(Some(&v), 5, 1, 60).as_secs();
        assert_eq!(s(json!(0)), 1);
        assert_eq!(s(json!(7)), 7);
        assert_eq!(s(json!(100_000)), 60);
        assert_eq!(s(json!("x")), 5);
        assert_eq!(s(json!(-3)), 5);
        assert_eq!(seconds(None, 5, 1, 60).as_secs(), 5);
    }

    #[test]
    fn instructions_show_server_strings_sanitised() {
        let st = Started {
            device_code: Secret::new("SECRET-DEVICE-CODE".into()),
            user_code: "AB\u{1b}[2J-CD".into(),
            verification_uri: "https://as.example/device\u{1b}]8;;x\u{7}"
                .into(),
            verification_uri_complete: Some(
                "https://as.example/d?c=1\n".into(),
            ),
            expires_in: Duration::from_secs(60),
            interval: Duration::from_secs(1),
        };
        let t = st.instructions("web");
        assert!(!t.contains('\u{1b}'), "{t:?}");
        assert!(!t.contains('\u{7}'), "{t:?}");
        assert!(t.contains("https://as.example/device"), "{t}");
        assert!(t.contains("AB"), "{t}");
        assert!(!t.contains("SECRET"), "the device code is never shown: {t}");
    }
}
