//! What a request to an HTTP server carries in `Authorization`, decided in
//! one place.
//!
//! A server authenticates in one of four configured ways: a bearer token
//! from the variable `bearer_token_env_var` names, a token the
//! `token_command` prints (see `command`), a token that `login` stored for
//! this exact URL (an `oauth` block), or nothing. A stored
//! token bound to a DPoP key goes as `Authorization: DPoP <token>` with a
//! fresh proof for each request's method and URL, never as Bearer; when
//! the server asks for a DPoP nonce, [`Authorization::dpop_nonce`] takes
//! it and the transport sends the request once more. The HTTP transport
//! asks [`Authorization::headers`] for every request and, when
//! the server refuses with 401 (or 403 `insufficient_scope`), asks
//! [`Authorization::renew`], which runs the login flow only when the
//! operator enabled step-up and at most [`MAX_AUTHORIZATIONS`] times in
//! one command. With refresh opted in (`"refresh": "auto"` or
//! `--refresh`), an expired stored token is refreshed before the first
//! request, and a 401 `invalid_token` (or a 401 without an error code)
//! redeems the refresh token once and sends the request once more, before
//! any step-up; the refresh is decided under the credential file's lock
//! (see `flow::redeem`), so concurrent commands redeem once. The transport never starts a login itself, and the header
//! value never leaves this type except onto the wire.

use std::time::Duration;

use super::dpop::Dpop;
use super::flow::Redeem;
use super::pkce::Secret;
use super::{DEFAULT_CALLBACK_TIMEOUT, Inline, command, flow, keys, store};
use crate::config::{Http, OAuth};
use crate::error::{Error, Kind, Result};
use crate::www_auth::Bearer;
use crate::{journal, msg, term};

/// Authorizations one command may run inline.
pub(crate) const MAX_AUTHORIZATIONS: usize = 3;

/// Where the header comes from (names only, no secrets).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    None,
    /// The variable that holds the token.
    Env(String),
    /// The `token_command` (its program) that printed the token.
    Command(String),
    /// An `oauth` block: tokens come from `login`.
    Login,
}

/// What an inline authorization (step-up) or refresh works with.
#[derive(Debug)]
struct StepUp {
    spec: Http,
    oauth: OAuth,
    lookup: fn(&str) -> Option<String>,
}

/// The `Authorization` of one server's requests.
pub(crate) struct Authorization {
    server: String,
    source: Source,
    /// The header value; secret.
    value: Option<String>,
    /// The proof key of a DPoP-bound token (then `value` is `DPoP ...`).
    dpop: Option<Dpop>,
    /// That key as the credential store holds it, to lend (secret).
    dpop_stored: Option<Secret>,
    step_up: Option<StepUp>,
    authorizations: usize,
    /// With refresh opted in: the entry to refresh on a 401.
    refresh: Option<StepUp>,
    /// Whether this command refreshed on a 401 already (once at most).
    refreshed: bool,
}

impl std::fmt::Debug for Authorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The value is a secret: only whether there is one.
        f.debug_struct("Authorization")
            .field("server", &self.server)
            .field("source", &self.source)
            .field("value", &self.value.as_ref().map(|_| "<secret>"))
            .field("dpop", &self.dpop.is_some())
            .field("step_up", &self.step_up.is_some())
            .field("refresh", &self.refresh.is_some())
            .finish()
    }
}

impl Authorization {
    /// No `Authorization` header at all.
    pub(crate) fn none(server: &str) -> Authorization {
        Authorization {
            server: server.to_string(),
            source: Source::None,
            value: None,
            dpop: None,
            dpop_stored: None,
            step_up: None,
            authorizations: 0,
            refresh: None,
            refreshed: false,
        }
    }

    /// What the daemon needs to present this credential exactly as this
    /// invocation would (the header value, a DPoP key as stored, and
    /// where it came from, for the same refusal hint), when nothing about
    /// it can change in this invocation: `None` with step-up or refresh
    /// in effect, whose renewals (a browser, a redemption under the
    /// store's lock) belong to the invocation. Holds secrets: it goes
    /// into a launch, whose key is its hash, and nowhere else.
    pub(crate) fn lend(&self) -> Option<serde_json::Value> {
        if self.step_up.is_some() || self.refresh.is_some() {
            return None;
        }
        let (source, label) = match &self.source {
            Source::None => ("none", None),
            Source::Env(v) => ("env", Some(v.as_str())),
            Source::Command(p) => ("command", Some(p.as_str())),
            Source::Login => ("login", None),
        };
        Some(serde_json::json!({
            "source": source,
            "label": label,
            "value": self.value,
            "dpop": self.dpop_stored.as_ref().map(Secret::expose),
        }))
    }

    /// The authorization [`Authorization::lend`] described, in the daemon:
    /// the same header, proofs from the same key, the same hints; no
    /// step-up and no refresh. `Err` names what is malformed.
    pub(crate) fn lent(
        server: &str,
        v: &serde_json::Value,
    ) -> std::result::Result<Authorization, String> {
        use serde_json::Value;
        let mut a = Authorization::none(server);
        if v.is_null() {
            return Ok(a);
        }
        let label = || {
            v.get("label")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or("an authorization without its label")
        };
        a.source = match v.get("source").and_then(Value::as_str) {
            Some("none") => Source::None,
            Some("env") => Source::Env(label()?),
            Some("command") => Source::Command(label()?),
            Some("login") => Source::Login,
            _ => return Err("an authorization of an unknown source".into()),
        };
        a.value = match v.get("value") {
            None | Some(Value::Null) => None,
            Some(Value::String(s))
                if !s.contains(['\r', '\n', '\0'])
                    && (s.starts_with("Bearer ")
                        || s.starts_with("DPoP ")) =>
            {
                Some(s.clone())
            }
            Some(_) => return Err("a malformed authorization value".into()),
        };
        if let Some(k) = v.get("dpop").and_then(Value::as_str) {
            let k = Secret::new(k.to_string());
            let key = keys::stored_p256(&k).map_err(|e| e.to_string())?;
            a.dpop = Some(Dpop::new(key).map_err(|e| e.to_string())?);
            a.dpop_stored = Some(k);
        }
        if a.value.as_deref().is_some_and(|s| s.starts_with("DPoP "))
            != a.dpop.is_some()
        {
            return Err(
                "a DPoP token without its key, or a key without one".into()
            );
        }
        Ok(a)
    }

    /// Decides a server's authorization from its entry: the bearer
    /// variable (which must be set), else the stored token of an `oauth`
    /// block (when it was obtained for this URL and has not expired),
    /// else none. `inline` holds the `--step-up` and `--refresh` flags;
    /// the entry's own `step_up` and `refresh` count too.
    pub(crate) fn resolve(
        server: &str,
        spec: &Http,
        lookup: fn(&str) -> Option<String>,
        inline: Inline,
    ) -> Result<Authorization> {
        let mut a = Authorization::none(server);
        if let Some(var) = &spec.bearer_token_env_var {
            a.source = Source::Env(var.clone());
            a.value = Some(env_bearer(var, &lookup)?);
            return Ok(a);
        }
        if let Some(argv) = &spec.token_command {
            let token = command::token(server, argv)?;
            a.source = Source::Command(argv[0].clone());
            a.value = Some(format!("Bearer {}", token.expose()));
            return Ok(a);
        }
        let Some(o) = &spec.oauth else { return Ok(a) };
        a.source = Source::Login;
        let step_up = o.step_up || inline.step_up;
        let refresh = o.auto_refresh || inline.refresh;
        let renewal =
            || StepUp { spec: spec.clone(), oauth: o.clone(), lookup };
        match stored_bearer(server, spec, &lookup, refresh) {
            Ok(Some(c)) => a.present(&c)?,
            Ok(None) => {}
            // With step-up, an expired token is not an error: the
            // server's 401 starts a new authorization.
            Err(e) if step_up && e.kind() == Kind::Auth => {
                msg::debug(&e.to_string());
            }
            Err(e) => return Err(e),
        }
        if step_up {
            a.step_up = Some(renewal());
        }
        if refresh {
            a.refresh = Some(renewal());
        }
        Ok(a)
    }

    /// Presents the credential `c`: as DPoP with its key when it has
    /// one, else as Bearer.
    fn present(&mut self, c: &store::Credential) -> Result<()> {
        let token = c.access_token.expose();
        match &c.dpop_key {
            Some(k) => {
                self.dpop = Some(Dpop::new(keys::stored_p256(k)?)?);
                self.dpop_stored = Some(k.clone());
                self.value = Some(format!("DPoP {token}"));
            }
            None => {
                self.dpop = None;
                self.dpop_stored = None;
                self.value = Some(format!("Bearer {token}"));
            }
        }
        Ok(())
    }

    /// The headers for the next request, `method` to `url`: none, or
    /// `Authorization` (and, for a DPoP-bound token, a fresh `DPoP`
    /// proof; if none can be made, the request goes without one and the
    /// server refuses it, rather than the token going as Bearer).
    pub(crate) fn headers(
        &self,
        method: &str,
        url: &str,
    ) -> Vec<(&'static str, String)> {
        let Some(v) = &self.value else { return vec![] };
        let mut out = vec![("authorization", v.clone())];
        if let Some(d) = &self.dpop {
            let token = v.strip_prefix("DPoP ").unwrap_or(v);
            match d.proof(method, url, Some(token)) {
                Ok(p) => out.push(("dpop", p)),
                Err(e) => msg::warn(&format!("server '{}': {e}", self.server)),
            }
        }
        out
    }

    /// After the server answered `status` with the challenge `challenge`
    /// and `nonce` (`DPoP-Nonce`): `None` unless it asks a DPoP-bound
    /// token's sender for a nonce (401 with `use_dpop_nonce`, RFC 9449
    /// §9); else whether the request may go again with the nonce (`Err`
    /// for an unusable nonce, or the one the refused proof carried).
    pub(crate) fn dpop_nonce(
        &self,
        status: u16,
        challenge: &str,
        nonce: Option<&str>,
        url: &str,
    ) -> Option<Result<()>> {
        let d = self.dpop.as_ref()?;
        let asks = status == 401
            && crate::www_auth::parse(challenge)
                .iter()
                .any(|c| c.param("error") == Some("use_dpop_nonce"));
        if !asks {
            return None;
        }
        Some(match d.take_nonce(url, nonce) {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::new(
                Kind::Auth,
                "the server refused the DPoP nonce it had asked for \
                 (use_dpop_nonce again); giving up",
            )
            .for_server(&self.server)),
            Err(e) => Err(e.for_server(&self.server)),
        })
    }

    /// After the server refused (HTTP `status`, with `challenge`): `None`
    /// when step-up is off (the refusal stands), else the outcome of one
    /// more authorization, after which the request is to be sent again.
    pub(crate) fn renew(
        &mut self,
        status: u16,
        challenge: Bearer,
    ) -> Option<Result<()>> {
        if let Some(r) = self.refresh_refused(status, &challenge) {
            match r {
                Ok(()) => return Some(Ok(())),
                // With step-up, a failed refresh leaves it to a login.
                Err(e) if self.step_up.is_some() => msg::debug(&e.to_string()),
                Err(e) => return Some(Err(e)),
            }
        }
        let step = self.step_up.as_ref()?;
        if self.authorizations >= MAX_AUTHORIZATIONS {
            return Some(Err(Error::new(
                Kind::Auth,
                format!(
                    "the server still refuses (HTTP {status}) after \
                     {MAX_AUTHORIZATIONS} authorizations in this command; \
                     giving up"
                ),
            )));
        }
        self.authorizations += 1;
        msg::debug(&format!(
            "server '{}': HTTP {status}{}; authorizing (step-up {} of \
             {MAX_AUTHORIZATIONS})",
            self.server,
            challenge
                .error
                .as_deref()
                .map(|e| format!(" ({})", term::line(e)))
                .unwrap_or_default(),
            self.authorizations
        ));
        let lookup = step.lookup;
        let cred = flow::authorize(flow::Request {
            server: &self.server,
            http: &step.spec,
            oauth: &step.oauth,
            challenge: Some(challenge),
            grant: step.oauth.grant,
            no_browser: false,
            callback_timeout: DEFAULT_CALLBACK_TIMEOUT,
            lookup: &lookup,
        });
        let renewed = cred.and_then(|c| {
            // A token that is expired on arrival (expires_in <= 0) is
            // never sent: it would only earn another 401.
            if c.expired(store::now()) {
                return Err(Error::new(
                    Kind::Auth,
                    "the authorization server issued a token that has \
                     already expired (expires_in <= 0)",
                ));
            }
            self.present(&c)
        });
        Some(renewed.map_err(|e| e.for_server(&self.server)))
    }

    /// With refresh opted in, after a 401 `invalid_token` (or a 401 with
    /// no error code) to a stored token, the first in this command: the
    /// outcome of redeeming the refresh token (unless another process did
    /// meanwhile) and presenting the new token. `None`: not a case for a
    /// refresh.
    fn refresh_refused(
        &mut self,
        status: u16,
        challenge: &Bearer,
    ) -> Option<Result<()>> {
        let r = self.refresh.as_ref()?;
        let error = challenge.error.as_deref();
        let expired = matches!(error, None | Some("invalid_token"));
        if status != 401 || !expired || self.refreshed {
            return None;
        }
        let value = self.value.as_deref()?;
        let refused = value.split_once(' ').map_or(value, |(_, t)| t);
        self.refreshed = true;
        msg::debug(&format!(
            "server '{}': HTTP 401; refreshing the token (once)",
            self.server
        ));
        let lookup = r.lookup;
        let cred = flow::redeem(
            &self.server,
            &r.spec,
            &r.oauth,
            &lookup,
            Redeem::IfStill(refused),
        )
        .and_then(|c| {
            if c.expired(store::now()) {
                return Err(Error::new(
                    Kind::Auth,
                    "the refreshed token has already expired (expires_in                      <= 0)",
                ));
            }
            Ok(c)
        });
        Some(
            cred.map_err(|e| refresh_failed(e, &self.server))
                .and_then(|c| self.present(&c)),
        )
    }

    /// What to do about a refusal, for the error message.
    pub(crate) fn refused_hint(&self) -> String {
        let server = &self.server;
        match (&self.source, self.value.is_some()) {
            (Source::Env(var), _) => {
                format!("the token in '{var}' was refused; set a valid one")
            }
            (Source::Command(program), _) => format!(
                "the token that token_command '{}' printed was refused",
                term::line(program)
            ),
            (Source::Login, true) => format!(
                "the stored token was refused; run 'rivumi-mcp login \
                 {server}' (or 'login {server} --refresh')"
            ),
            (Source::Login, false) => {
                format!("run 'rivumi-mcp login {server}' (or pass --step-up)")
            }
            (Source::None, _) => format!(
                "configure bearer_token_env_var, or an \"oauth\" block and \
                 run 'rivumi-mcp login {server}'"
            ),
        }
    }

    /// The header's name for the journal and `-v`, when one is sent.
    pub(crate) fn header_name(&self) -> Option<&'static str> {
        self.value.as_ref().map(|_| "authorization")
    }
}

/// `Bearer <token>` from the variable `var`, which must be set, non-empty
/// and free of spaces and line breaks.
fn env_bearer(
    var: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String> {
    let token = lookup(var).filter(|t| !t.is_empty()).ok_or_else(|| {
        Error::refused(format!(
            "environment variable '{var}' (bearer_token_env_var) is not set \
             or empty"
        ))
    })?;
    if token.contains(['\r', '\n', '\0', ' ']) {
        return Err(Error::refused(format!(
            "the token in '{var}' contains spaces or line breaks"
        )));
    }
    Ok(format!("Bearer {token}"))
}

/// A failed refresh, for the error message: the stored credential is as it
/// was, and what to do.
fn refresh_failed(e: Error, server: &str) -> Error {
    let kind = e.kind();
    Error::new(
        kind,
        format!(
            "the token refresh failed: {}; the stored credential is \
             unchanged (run 'rivumi-mcp login {server}')",
            e.message()
        ),
    )
    .for_server(server)
}

/// The stored credential to present, for a server with an `oauth` block:
/// only when the entry was obtained for this exact URL (and token
/// endpoint, when one is configured). An expired token is an error, unless
/// the operator opted in to `refresh` (then it is refreshed, under the
/// credential file's lock, or was by another process meanwhile).
fn stored_bearer(
    server: &str,
    h: &Http,
    lookup: &dyn Fn(&str) -> Option<String>,
    refresh: bool,
) -> Result<Option<store::Credential>> {
    let path = store::path(lookup)?;
    let Some(c) = store::get(&path, server)? else { return Ok(None) };
    let url = h.url.to_string();
    if c.url != url {
        msg::warn(&format!(
            "server '{server}': the stored credential was obtained for {}, \
             not {url}; it is not sent (run 'rivumi-mcp login {server}')",
            term::line(&c.url)
        ));
        return Ok(None);
    }
    if let Some(t) = h.oauth.as_ref().and_then(|o| o.token_endpoint.as_ref())
        && c.token_endpoint != t.to_string()
    {
        msg::warn(&format!(
            "server '{server}': the stored credential came from another \
             token endpoint; it is not sent (run 'rivumi-mcp login {server}')"
        ));
        return Ok(None);
    }
    if c.expired(store::now())
        && refresh
        && c.refresh_token.is_some()
        && let Some(o) = &h.oauth
    {
        let c = flow::redeem(server, h, o, lookup, Redeem::IfExpired)
            .map_err(|e| refresh_failed(e, server))?;
        return Ok(Some(c));
    }
    if c.expired(store::now()) && refresh {
        return Err(Error::new(
            Kind::Auth,
            format!(
                "the stored token has expired and no refresh token is \
                 stored; run 'rivumi-mcp login {server}'"
            ),
        )
        .for_server(server));
    }
    if c.expired(store::now()) {
        return Err(Error::new(
            Kind::Auth,
            format!(
                "the stored token expired at {}; run 'rivumi-mcp login \
                 {server}' (tokens are never refreshed silently)",
                journal::timestamp(
                    std::time::UNIX_EPOCH
                        + Duration::from_secs(c.expires_at.unwrap_or(0))
                )
            ),
        )
        .for_server(server));
    }
    Ok(Some(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settled_credential_is_lent_and_rebuilt_the_same() {
        let mut a = Authorization::none("web");
        a.source = Source::Command("op".into());
        a.value = Some("Bearer tok-1".into());
        let lent = a.lend().unwrap();
        let b = Authorization::lent("web", &lent).unwrap();
        assert_eq!(b.source, a.source);
        assert_eq!(b.headers("POST", "https://x/mcp"), a.headers("POST", "u"));
        assert_eq!(b.refused_hint(), a.refused_hint());
        assert!(!format!("{b:?}").contains("tok-1"));
        assert_eq!(
            Authorization::lent("web", &serde_json::Value::Null)
                .unwrap()
                .headers("GET", "u"),
            vec![]
        );
    }

    #[test]
    fn a_dpop_bound_login_is_lent_with_its_key_and_proves_each_request() {
        let key = keys::generate_p256().unwrap();
        let v = serde_json::json!({"source": "login", "label": null,
            "value": "DPoP tok-9", "dpop": key.expose()});
        let a = Authorization::lent("web", &v).unwrap();
        let again = Authorization::lent("web", &a.lend().unwrap()).unwrap();
        for auth in [&a, &again] {
            let h = auth.headers("POST", "https://x/mcp");
            assert_eq!(h[0], ("authorization", "DPoP tok-9".to_string()));
            assert_eq!(h[1].0, "dpop", "a proof for every request");
        }
        let p1 = &a.headers("POST", "https://x/mcp")[1].1;
        let p2 = &a.headers("POST", "https://x/mcp")[1].1;
        assert_ne!(p1, p2, "a fresh proof each time");
        assert!(!format!("{a:?}").contains(key.expose()));
        let bearer_with_key = serde_json::json!({"source": "login",
            "value": "Bearer tok-9", "dpop": key.expose()});
        assert!(Authorization::lent("web", &bearer_with_key).is_err());
        let bad_key = serde_json::json!({"source": "login",
            "value": "DPoP tok-9", "dpop": "not-a-key"});
        assert!(Authorization::lent("web", &bad_key).is_err());
    }

    #[test]
    fn a_malformed_lent_credential_is_refused() {
        for bad in [
            serde_json::json!({"source": "magic", "value": "Bearer t"}),
            serde_json::json!({"source": "env", "value": "Bearer t"}),
            serde_json::json!({"source": "login", "value": "Basic dXNlcg=="}),
            serde_json::json!({"source": "login", "value": "Bearer t\r\nX: y"}),
            serde_json::json!({"source": "login", "value": "DPoP t"}),
        ] {
            assert!(Authorization::lent("web", &bad).is_err(), "{bad}");
        }
    }
}
