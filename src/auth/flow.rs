//! One authorization, start to finish: find the authorization server,
//! settle who the client is, choose the scopes, get a token, store it.
//!
//! Used by `login` and by step-up (a request that got 401, or 403 with
//! `insufficient_scope`, when the operator opted in). The default is the
//! controlled path: a configured client and a configured (or discovered)
//! authorization server. What an operator can opt into, per server:
//! discovery from the MCP server itself (when the `oauth` block names no
//! authorization server), dynamic client registration
//! (`"registration": "dynamic"`), a client metadata document (a
//! `client_id` that is an https URL, when the server supports them), the
//! client-credentials grant, and `offline_access`.
//!
//! A dynamically registered client (its id and secret) is presented only
//! where it was registered: the registration stored with the credential
//! records the issuer and the token endpoint it was made at, and is used
//! again (for a login or a refresh) only there. Discovery from the MCP
//! server reads the protected-resource metadata afresh for every
//! authorization, so when the server names another authorization server
//! (SEP-2352) the next one registers there (or uses the configured
//! client) instead of presenting the old registration.
//!
//! What the 2026-07-28 authorization rules add, on every wire: a
//! registration says `application_type: "native"` (SEP-837) and lists
//! the `refresh_token` grant (SEP-2207); the RFC 8707 `resource` is the
//! protected resource's own identifier exactly as published; the issuer
//! is recorded as its metadata published it, and an `iss` is compared
//! with it as a string (RFC 9207, SEP-2468); a step-up asks for what was
//! granted plus what is challenged (SEP-2350).

use std::time::Duration;

use serde_json::{Value, json};

use std::sync::Arc;

use super::discovery::{self, AuthServer};
use super::dpop::Dpop;
use super::keys::{self, SigningKey};
use super::pkce::{self, Secret};
use super::store::{self, Credential};
use super::token::AuthMethod;
use super::{callback, device, machine, token};
use crate::config::{DpopMode, Grant, Http, OAuth};
use crate::deadline::Deadline;
use crate::error::{Error, Kind, Result};
use crate::urlcheck::Url;
use crate::www_auth::Bearer;
use crate::{journal, mcp, msg, net, term};

/// Each metadata fetch, registration and token request.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The endpoints and capabilities an authorization uses.
#[derive(Debug, Clone)]
pub(crate) struct Endpoints {
    /// The issuer as its metadata published it (RFC 9207 compares `iss`
    /// with exactly this); `None` without metadata.
    pub(crate) issuer: Option<String>,
    pub(crate) authorization: Url,
    pub(crate) token: Url,
    pub(crate) registration: Option<Url>,
    pub(crate) methods: Vec<String>,
    pub(crate) sends_iss: bool,
    pub(crate) scopes_supported: Vec<String>,
    pub(crate) cimd: bool,
    /// `token_endpoint_auth_signing_alg_values_supported` (empty: not
    /// published).
    pub(crate) signing_algs: Vec<String>,
    /// `dpop_signing_alg_values_supported` (empty: not published).
    pub(crate) dpop_algs: Vec<String>,
    /// `device_authorization_endpoint` (RFC 8628), when published.
    pub(crate) device: Option<Url>,
}

/// The strings of a metadata array, or none.
fn listed(doc: &Value, key: &str) -> Vec<String> {
    doc.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter().filter_map(Value::as_str).map(str::to_string).collect()
        })
        .unwrap_or_default()
}

impl From<AuthServer> for Endpoints {
    fn from(a: AuthServer) -> Endpoints {
        Endpoints {
            signing_algs: listed(
                &a.document,
                "token_endpoint_auth_signing_alg_values_supported",
            ),
            dpop_algs: listed(
                &a.document,
                "dpop_signing_alg_values_supported",
            ),
            device: a
                .document
                .get("device_authorization_endpoint")
                .and_then(Value::as_str)
                .and_then(|u| Url::parse(u).ok()),
            issuer: Some(a.published_issuer),
            authorization: a.authorization_endpoint,
            token: a.token_endpoint,
            registration: a.registration_endpoint,
            methods: a.auth_methods,
            sends_iss: a.sends_iss,
            scopes_supported: a.scopes_supported,
            cimd: a.client_id_metadata_document_supported,
        }
    }
}

/// Everything one authorization needs.
pub(crate) struct Request<'a> {
    pub(crate) server: &'a str,
    pub(crate) http: &'a Http,
    pub(crate) oauth: &'a OAuth,
    /// What the server said when it refused a request (step-up), if any.
    pub(crate) challenge: Option<Bearer>,
    /// The grant to run: the block's, or the device grant of `--device`.
    pub(crate) grant: Grant,
    /// `--no-browser`: print the URL and read the redirect pasted back.
    pub(crate) no_browser: bool,
    pub(crate) callback_timeout: Duration,
    pub(crate) lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// Sends one unauthenticated `initialize` and returns the status and the
/// raw `WWW-Authenticate` header (empty when there is none).
pub(crate) fn probe(url: &Url, d: &Deadline) -> Result<(u16, String)> {
    let init =
        mcp::request(1, mcp::method::INITIALIZE, mcp::initialize_params());
    let a = net::request(
        "POST",
        url,
        &[("accept", "application/json, text/event-stream".to_string())],
        Some(("application/json", init.to_string().into_bytes())),
        d,
    )?;
    if let Some(e) = a.redirect_error(&url.to_string()) {
        return Err(e);
    }
    Ok((a.status, a.www_authenticate.unwrap_or_default()))
}

/// What discovery found: the endpoints, and what the protected
/// resource's metadata said, when there was any.
struct Found {
    ep: Endpoints,
    /// The protected resource's `scopes_supported`.
    resource_scopes: Vec<String>,
    /// The protected resource's `resource`, exactly as published.
    resource: Option<String>,
}

impl Found {
    fn endpoints(ep: Endpoints) -> Found {
        Found { ep, resource_scopes: vec![], resource: None }
    }
}

/// Finds the endpoints: configured, discovered from the configured issuer,
/// or discovered from the MCP server (RFC 9728, then the 2025-03-26
/// metadata at the server's origin and its default endpoints). The
/// protected-resource metadata is read afresh each time, so an
/// authorization after the server changed its authorization server
/// (SEP-2352) goes to the new one.
fn endpoints(
    req: &Request<'_>,
    challenge: &mut Option<Bearer>,
    d: &Deadline,
) -> Result<Found> {
    let o = req.oauth;
    if let Some(iss) = &o.authorization_server {
        // Configured by the operator, with whatever its metadata names.
        let a = discovery::auth_server(iss, &net::Reach::anywhere(), d)?;
        return Ok(Found::endpoints(a.into()));
    }
    if let (Some(a), Some(t)) = (&o.authorization_endpoint, &o.token_endpoint)
    {
        return Ok(Found::endpoints(Endpoints {
            issuer: None,
            authorization: a.clone(),
            token: t.clone(),
            registration: None,
            methods: vec![
                "client_secret_basic".into(),
                "client_secret_post".into(),
            ],
            sends_iss: false,
            scopes_supported: vec![],
            cimd: false,
            signing_algs: vec![],
            dpop_algs: vec![],
            device: None,
        }));
    }
    let url = &req.http.url;
    // From here on the MCP server says where to go: not inside, unless it
    // is there itself.
    let reach = net::Reach::of(url, req.lookup);
    if challenge.is_none() {
        let (status, header) = probe(url, d)?;
        let ch = Bearer::from_header(&header);
        msg::debug(&format!(
            "server '{}': unauthenticated request: HTTP {status}",
            req.server
        ));
        *challenge = Some(ch);
    }
    let hint = challenge.as_ref().and_then(|c| c.resource_metadata.clone());
    let (prm, tried) =
        discovery::try_resource(url, hint.as_deref(), &reach, d)?;
    if let Some(prm) = prm {
        let first = prm.authorization_servers.first().ok_or_else(|| {
            Error::server(format!(
                "protected resource metadata at {} names no authorization \
                 server",
                prm.source
            ))
        })?;
        let iss = Url::parse(first).map_err(|e| {
            Error::server(format!(
                "authorization server '{}': {e}",
                term::line(first)
            ))
        })?;
        let a = discovery::auth_server(&iss, &reach, d)?;
        msg::debug(&format!(
            "server '{}': authorization server {} (metadata at {})",
            req.server,
            term::line(&a.published_issuer),
            a.source
        ));
        return Ok(Found {
            ep: a.into(),
            resource_scopes: prm.scopes_supported,
            resource: Some(prm.resource),
        });
    }
    // MCP 2025-03-26: the authorization server's metadata lives at the MCP
    // server's origin, with default endpoints when there is none.
    msg::debug(&format!(
        "server '{}': no protected resource metadata ({}); trying the \
         2025-03-26 discovery at the server's origin",
        req.server,
        tried.join(", ")
    ));
    if let Some(a) = discovery::legacy_auth_server(url, &reach, d)? {
        return Ok(Found::endpoints(a.into()));
    }
    Ok(Found::endpoints(Endpoints {
        issuer: None,
        authorization: url.with_path("/authorize"),
        token: url.with_path("/token"),
        registration: Some(url.with_path("/register")),
        methods: vec!["client_secret_basic".into()],
        sends_iss: false,
        scopes_supported: vec![],
        cimd: false,
        signing_algs: vec![],
        dpop_algs: vec![],
        device: None,
    }))
}

/// The client as the token endpoint sees it.
#[derive(Debug, Clone)]
pub(crate) struct ClientIdentity {
    pub(crate) id: String,
    pub(crate) secret: Option<Secret>,
    /// The one method to use at the token endpoint.
    pub(crate) method: AuthMethod,
    /// A dynamic registration to store with the credential.
    pub(crate) registration: Option<Value>,
    /// `private_key_jwt`: the key, and the assertion's audience.
    pub(crate) key: Option<(Arc<SigningKey>, String)>,
}

/// The method for a client with a secret: what the registration said, else
/// what the server supports, preferring `client_secret_basic`.
fn secret_method(methods: &[String]) -> AuthMethod {
    if AuthMethod::ClientSecretBasic.listed_in(methods) {
        AuthMethod::ClientSecretBasic
    } else if AuthMethod::ClientSecretPost.listed_in(methods) {
        AuthMethod::ClientSecretPost
    } else {
        AuthMethod::ClientSecretBasic
    }
}

fn is_url_client_id(id: &str) -> bool {
    id.starts_with("https://") && Url::parse(id).is_ok()
}

/// Settles the client: configured (a plain id, or an https URL used as a
/// client metadata document), a stored dynamic registration made at this
/// issuer and token endpoint ([`bound_to`]; one made elsewhere is never
/// presented here), or a new registration (only with the opt-in).
fn client(
    req: &Request<'_>,
    secret: Option<&Secret>,
    ep: &Endpoints,
    redirect_uri: Option<&str>,
    stored: Option<&Credential>,
    d: &Deadline,
) -> Result<ClientIdentity> {
    let o = req.oauth;
    let secret = secret.cloned();
    if let Some(id) = &o.client_id {
        if is_url_client_id(id) && ep.cimd {
            msg::debug("using the client_id as a client metadata document");
            return Ok(ClientIdentity {
                id: id.clone(),
                secret: None,
                method: AuthMethod::None,
                registration: None,
                key: None,
            });
        }
        if let Some(path) = &o.machine.client_key_file {
            let audience =
                ep.issuer.clone().unwrap_or_else(|| ep.token.to_string());
            return key_identity(id, path, &ep.signing_algs, audience);
        }
        let method = if secret.is_some() {
            secret_method(&ep.methods)
        } else {
            AuthMethod::None
        };
        return Ok(ClientIdentity {
            id: id.clone(),
            secret,
            method,
            registration: None,
            key: None,
        });
    }
    if !o.dynamic_registration {
        return Err(Error::usage(
            "the oauth block has no client_id (and dynamic registration is \
             not enabled)",
        ));
    }
    if let Some(c) = reuse_registration(req, ep, redirect_uri, stored) {
        return Ok(c);
    }
    register(req, ep, redirect_uri, d)
}

/// A stored dynamic registration made where this login goes (and for its
/// redirect URI), to present again. Registrations are kept per
/// authorization server: no other is ever presented here (a warning says
/// when the stored one was made elsewhere).
fn reuse_registration(
    req: &Request<'_>,
    ep: &Endpoints,
    redirect_uri: Option<&str>,
    stored: Option<&Credential>,
) -> Option<ClientIdentity> {
    let issuer = ep.issuer.as_deref();
    let kept = stored.into_iter().flat_map(|c| {
        c.registration.iter().chain(c.other_registrations.iter())
    });
    let mut made_elsewhere = None;
    for reg in kept {
        if !bound_to(reg, issuer, &ep.token) {
            made_elsewhere.get_or_insert(reg);
            continue;
        }
        // Servers compare redirect URIs exactly (RFC 8252's any-port rule
        // is not universal): reuse only a registration made for this one.
        let same_redirect = redirect_uri.is_none_or(|r| {
            reg.get("redirect_uris")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|u| u.as_str() == Some(r)))
        });
        if same_redirect
            && let Some(c) = registration_identity(reg, &ep.methods)
        {
            msg::debug("reusing the stored dynamic registration");
            return Some(c);
        }
        made_elsewhere = None;
        break;
    }
    if let Some(reg) = made_elsewhere {
        msg::warn(&format!(
            "server '{}': the stored dynamic registration {}; it is not \
             presented to {}",
            req.server,
            registered_at(reg),
            term::line(issuer.unwrap_or(&ep.token.to_string()))
        ));
    }
    None
}

/// RFC 7591: registers rivumi-mcp at the authorization server, for the
/// grant of `req` (and `redirect_uri`, when it has one), binding the
/// registration to where it was made (see [`bound_to`]).
fn register(
    req: &Request<'_>,
    ep: &Endpoints,
    redirect_uri: Option<&str>,
    d: &Deadline,
) -> Result<ClientIdentity> {
    let issuer = ep.issuer.as_deref();
    let Some(endpoint) = &ep.registration else {
        return Err(Error::new(
            Kind::Auth,
            "dynamic registration is enabled, but the authorization server \
             has no registration_endpoint",
        ));
    };
    let method = [
        AuthMethod::None,
        AuthMethod::ClientSecretPost,
        AuthMethod::ClientSecretBasic,
    ]
    .into_iter()
    .find(|m| m.listed_in(&ep.methods))
    .unwrap_or(AuthMethod::ClientSecretBasic)
    .name();
    // `refresh_token` always goes with a person's grant, so that the
    // tokens an `offline_access` request earns can be used (SEP-2207).
    let grants: &[&str] = match req.grant {
        Grant::AuthorizationCode => &["authorization_code", "refresh_token"],
        Grant::DeviceCode => &[device::GRANT_TYPE, "refresh_token"],
        Grant::ClientCredentials => &["client_credentials"],
        Grant::JwtBearer | Grant::Enterprise => &[machine::JWT_BEARER],
    };
    let code = req.grant == Grant::AuthorizationCode;
    let mut body = json!({
        "client_name": "rivumi-mcp",
        // A CLI with a loopback redirect is a native application (RFC
        // 8252; SEP-837 makes the field mandatory).
        "application_type": "native",
        "grant_types": grants,
        "response_types": if code { json!(["code"]) } else { json!([]) },
        "token_endpoint_auth_method": method,
    });
    if let Some(r) = redirect_uri {
        body["redirect_uris"] = json!([r]);
    }
    let what = format!("registration endpoint {endpoint}");
    let a = net::request(
        "POST",
        endpoint,
        &[("accept", "application/json".to_string())],
        Some(("application/json", body.to_string().into_bytes())),
        d,
    )?;
    if let Some(e) = a.redirect_error(&what) {
        return Err(e);
    }
    if !(200..300).contains(&a.status) {
        return Err(Error::new(
            Kind::Auth,
            format!("{what} answered HTTP {}{}", a.status, a.snippet()),
        ));
    }
    let mut reg = Value::Object(a.json_object(&what)?);
    // The binding (see `bound_to`), whatever the answer said.
    reg["issuer"] = json!(issuer);
    reg["token_endpoint"] = json!(ep.token.to_string());
    if reg.get("token_endpoint_auth_method").is_none() {
        reg["token_endpoint_auth_method"] = json!(method);
    }
    journal::event(
        "client_registered",
        json!({"server": req.server, "registration_endpoint": endpoint.to_string()}),
    );
    let mut c = registration_identity(&reg, &ep.methods).ok_or_else(|| {
        Error::server(format!("{what}: the answer has no client_id"))
    })?;
    c.registration = Some(reg);
    Ok(c)
}

/// Whether a stored dynamic registration may be presented at `token`
/// (and at the authorization endpoint of `issuer`): the registration is
/// bound to the issuer and the token endpoint it was made at, or, when
/// the issuer was unknown (no authorization server metadata), to the
/// token endpoint's origin. A registration stored without the binding
/// (before it was recorded) is bound to nothing.
fn bound_to(reg: &Value, issuer: Option<&str>, token: &Url) -> bool {
    let at = |k: &str| reg.get(k).and_then(Value::as_str);
    let Some(registered) = at("token_endpoint") else { return false };
    if !same_issuer(at("issuer"), issuer) {
        return false;
    }
    match issuer {
        Some(_) => registered == token.to_string(),
        None => {
            Url::parse(registered).is_ok_and(|u| u.origin() == token.origin())
        }
    }
}

/// How many registrations made at other authorization servers are kept.
const MAX_OTHER_REGISTRATIONS: usize = 8;

/// The registrations to keep beside `current` after a login: the stored
/// ones (newest first) that were made at another authorization server
/// than `current`, bounded.
fn other_registrations(
    stored: Option<&Credential>,
    current: Option<&Value>,
) -> Vec<Value> {
    let at = |r: &Value| {
        let f = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
        (f("issuer"), f("token_endpoint"))
    };
    let here = current.map(at);
    let mut kept: Vec<Value> = vec![];
    let previous = stored.into_iter().flat_map(|c| {
        c.registration.iter().chain(c.other_registrations.iter())
    });
    for r in previous {
        let place = at(r);
        let known = place.1.is_some();
        if known
            && Some(&place) != here.as_ref()
            && !kept.iter().any(|k| at(k) == place)
            && kept.len() < MAX_OTHER_REGISTRATIONS
        {
            kept.push(r.clone());
        }
    }
    kept
}

/// Whether two recorded issuers name one authorization server: the same
/// string, or the same canonical URL (entries stored before the issuer
/// was kept as published hold its canonical form). This keys what is
/// stored; the `iss` of an authorization response is compared exactly.
fn same_issuer(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a == b
                || matches!((Url::parse(a), Url::parse(b)),
                            (Ok(x), Ok(y)) if x == y)
        }
        _ => false,
    }
}

/// Where a stored registration was made, for messages: "was made at
/// ..." (or that this was not recorded).
fn registered_at(reg: &Value) -> String {
    let at = |k: &str| reg.get(k).and_then(Value::as_str);
    match (at("token_endpoint"), at("issuer")) {
        (None, _) => "does not record where it was made (an older \
                      rivumi-mcp stored it)"
            .into(),
        (Some(t), i) => format!(
            "was made at another authorization server ({})",
            term::clip(&term::line(i.unwrap_or(t)), 200)
        ),
    }
}

fn registration_identity(
    reg: &Value,
    methods: &[String],
) -> Option<ClientIdentity> {
    let id = reg.get("client_id")?.as_str()?.to_string();
    let secret = reg
        .get("client_secret")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(|s| Secret::new(s.to_string()));
    let method =
        match reg.get("token_endpoint_auth_method").and_then(Value::as_str) {
            // A method rivumi-mcp does not speak: the client id alone.
            Some(m) => AuthMethod::parse(m).unwrap_or(AuthMethod::None),
            None if secret.is_some() => secret_method(methods),
            None => AuthMethod::None,
        };
    Some(ClientIdentity {
        id,
        secret,
        method,
        registration: Some(reg.clone()),
        key: None,
    })
}

/// A `private_key_jwt` client: the key from `path`, signing with the
/// algorithm the authorization server accepts for assertions (when it
/// says: a server that lists only others, `none` or HS256 included, is
/// refused); the assertion's audience is the issuer, else the token
/// endpoint.
fn key_identity(
    id: &str,
    path: &std::path::Path,
    signing_algs: &[String],
    audience: String,
) -> Result<ClientIdentity> {
    let key = keys::load(path)?;
    let alg = key.alg();
    if !signing_algs.is_empty() && !signing_algs.iter().any(|a| a == alg) {
        return Err(Error::new(
            Kind::Auth,
            format!(
                "the authorization server accepts client assertions signed \
                 with {} only; the key in {} signs {alg}",
                term::clip(&term::line(&signing_algs.join(", ")), 200),
                path.display()
            ),
        ));
    }
    Ok(ClientIdentity {
        id: id.to_string(),
        secret: None,
        method: AuthMethod::PrivateKeyJwt,
        registration: None,
        key: Some((Arc::new(key), audience)),
    })
}

/// The DPoP key of a new credential, when DPoP is on for it: `"dpop":
/// true`, or `"auto"` and the authorization server lists ES256. A server
/// that lists algorithms without ES256 cannot take our proofs.
fn dpop_key(o: &OAuth, ep: &Endpoints) -> Result<Option<(Secret, Dpop)>> {
    let es256 = ep.dpop_algs.iter().any(|a| a == "ES256");
    let on = match o.machine.dpop {
        DpopMode::Off => false,
        DpopMode::Auto => es256,
        DpopMode::On if ep.dpop_algs.is_empty() || es256 => true,
        DpopMode::On => {
            return Err(Error::new(
                Kind::Auth,
                format!(
                    "\"dpop\" is on, but the authorization server takes DPoP \
                     proofs signed with {} only (rivumi-mcp signs ES256)",
                    term::clip(&term::line(&ep.dpop_algs.join(", ")), 200)
                ),
            ));
        }
    };
    if !on {
        return Ok(None);
    }
    let stored = keys::generate_p256()?;
    let dpop = Dpop::new(keys::stored_p256(&stored)?)?;
    Ok(Some((stored, dpop)))
}

/// The scopes: configured ones win; else the challenge's; else the
/// protected resource's `scopes_supported`; else none. A step-up (a
/// `granted` given) asks for the union of what was granted before (the
/// stored token's scopes), those and what the server now challenges for
/// (`step_up`; SEP-2350), so that the
/// new token does not lose what the old one could do. `offline_access`
/// is added only when the operator wants it and the authorization server
/// lists it (SEP-2207), whatever was granted before (the server may be
/// another one now).
pub(crate) fn scopes(
    configured: &[String],
    challenge: Option<&str>,
    step_up: Option<&str>,
    granted: Option<&str>,
    resource_scopes: &[String],
    as_scopes: &[String],
    offline_access: bool,
) -> Option<String> {
    let words = |c: &str| -> Vec<String> {
        c.split(' ').filter(|x| !x.is_empty()).map(str::to_string).collect()
    };
    let base: Vec<String> = if !configured.is_empty() {
        configured.to_vec()
    } else if let Some(c) = challenge.filter(|c| !c.trim().is_empty()) {
        words(c)
    } else {
        resource_scopes.to_vec()
    };
    let mut s: Vec<String> = vec![];
    let before = granted.map(words).unwrap_or_default();
    let before = before.into_iter().filter(|x| x != "offline_access");
    let asked = step_up.map(words).unwrap_or_default();
    for x in before.chain(base).chain(asked) {
        if !s.contains(&x) {
            s.push(x);
        }
    }
    let wanted =
        offline_access && as_scopes.iter().any(|x| x == "offline_access");
    if wanted && !s.iter().any(|x| x == "offline_access") {
        s.push("offline_access".into());
    }
    (!s.is_empty()).then(|| s.join(" "))
}

/// The configured client secret; an unset variable refuses before any
/// request is made.
fn configured_secret(req: &Request<'_>) -> Result<Option<Secret>> {
    let Some(var) = &req.oauth.client_secret_env_var else { return Ok(None) };
    let v = (req.lookup)(var).filter(|v| !v.is_empty()).ok_or_else(|| {
        Error::refused(format!(
            "environment variable '{var}' (client_secret_env_var) is not set \
             or empty"
        ))
    })?;
    Ok(Some(Secret::new(v)))
}

/// The callback listener: on the configured port; else on the port of a
/// stored dynamic registration (so it can be reused with servers that
/// compare redirect URIs exactly) when that port is free; else ephemeral.
fn bind_listener(
    o: &OAuth,
    stored: Option<&Credential>,
) -> Result<callback::Listener> {
    if let Some(port) = o.redirect_port {
        return callback::Listener::bind(port, &o.redirect_path);
    }
    let registered = stored
        .and_then(|c| c.registration.as_ref())
        .and_then(|r| r.get("redirect_uris")?.as_array()?.first()?.as_str())
        .and_then(|u| u.strip_prefix("http://127.0.0.1:"))
        .and_then(|rest| {
            let (port, path) = rest.split_once('/')?;
            (format!("/{path}") == o.redirect_path).then_some(port)
        })
        .and_then(|p| p.parse::<u16>().ok());
    if let Some(port) = registered
        && let Ok(l) = callback::Listener::bind(port, &o.redirect_path)
    {
        return Ok(l);
    }
    callback::Listener::bind(0, &o.redirect_path)
}

/// What an authorization settled before its grant runs: the client's
/// secret, the stored entry, the endpoints, the resource and the scopes,
/// and the DPoP key of the new token.
struct Plan {
    secret: Option<Secret>,
    store_path: std::path::PathBuf,
    stored: Option<Credential>,
    ep: Endpoints,
    /// The MCP server's URL.
    url: String,
    /// RFC 8707 `resource`: exactly what the protected resource published
    /// (it may be the origin without a path), else the server's URL.
    resource: String,
    scope: Option<String>,
    dpop: Option<(Secret, Dpop)>,
    /// A platform's assertion (or ID token), read and checked before any
    /// request: a malformed or expired one stops the login there.
    assertion: Option<Secret>,
}

impl Plan {
    fn new(req: &Request<'_>) -> Result<Plan> {
        let secret = configured_secret(req)?;
        let store_path = store::path(req.lookup)?;
        let stored = store::get(&store_path, req.server)?;
        let assertion = match &req.oauth.machine.assertion {
            Some(a) if !req.grant.interactive() => {
                Some(machine::read_assertion(a, req.lookup)?)
            }
            _ => None,
        };
        let d =
            Deadline::new("authorization server metadata", REQUEST_TIMEOUT);
        let mut challenge = req.challenge.clone();
        let found = endpoints(req, &mut challenge, &d)?;
        let ep = found.ep;
        let o = req.oauth;
        let url = req.http.url.to_string();
        let resource = found.resource.unwrap_or_else(|| url.clone());
        // On a step-up (any re-authorization a refusal started), what the
        // stored token for this URL was granted.
        let granted = stored
            .as_ref()
            .filter(|c| req.challenge.is_some() && c.url == url)
            .and_then(|c| c.scope.as_deref());
        let scope = scopes(
            &o.scopes,
            challenge.as_ref().and_then(|c| c.scope.as_deref()),
            req.challenge.as_ref().and_then(|c| c.scope.as_deref()),
            granted,
            &found.resource_scopes,
            &ep.scopes_supported,
            o.offline_access,
        );
        let dpop = dpop_key(o, &ep)?;
        Ok(Plan {
            secret,
            store_path,
            stored,
            ep,
            url,
            resource,
            scope,
            dpop,
            assertion,
        })
    }

    /// The proofs of the new token's key, when DPoP is on.
    fn proofs(&self) -> Option<&Dpop> {
        self.dpop.as_ref().map(|(_, d)| d)
    }

    /// The client, settled at the token endpoint's server.
    fn client(
        &self,
        req: &Request<'_>,
        redirect_uri: Option<&str>,
        what: &str,
    ) -> Result<ClientIdentity> {
        let d = Deadline::new(what, REQUEST_TIMEOUT);
        let (secret, stored) = (self.secret.as_ref(), self.stored.as_ref());
        client(req, secret, &self.ep, redirect_uri, stored, &d)
    }
}

/// Runs one authorization and stores the credential. Returns it.
pub(crate) fn authorize(req: Request<'_>) -> Result<Credential> {
    let plan = Plan::new(&req)?;
    let (tokens, identity) = match req.grant {
        Grant::AuthorizationCode => code_grant(&req, &plan)?,
        Grant::DeviceCode => device_grant(&req, &plan)?,
        Grant::ClientCredentials | Grant::JwtBearer | Grant::Enterprise => {
            machine_grant(&req, &plan)?
        }
    };
    keep(&req, plan, tokens, identity)
}

/// The grants without a person: client credentials, jwt-bearer with the
/// workload's assertion, and enterprise-managed authorization.
fn machine_grant(
    req: &Request<'_>,
    plan: &Plan,
) -> Result<(token::Tokens, ClientIdentity)> {
    let m = &req.oauth.machine;
    let identity = plan.client(req, None, "the token request")?;
    let d = Deadline::new("the token request", REQUEST_TIMEOUT);
    let client = identity.as_client();
    let (ep, proofs) = (&plan.ep, plan.proofs());
    let (scope, resource) = (plan.scope.as_deref(), plan.resource.as_str());
    let assertion = || {
        plan.assertion.as_ref().ok_or_else(|| {
            Error::usage(format!(
                "\"grant\": \"{}\" needs 'assertion_file' or \
                 'assertion_env_var'",
                req.grant.name()
            ))
        })
    };
    let tokens = match req.grant {
        Grant::JwtBearer => {
            let a = assertion()?;
            if let Some(source) = &m.assertion {
                machine::check_audience(
                    source,
                    a,
                    ep.issuer.as_deref(),
                    &ep.token,
                )?;
            }
            machine::jwt_bearer(
                &ep.token, &client, a, scope, resource, proofs, &d,
            )?
        }
        Grant::Enterprise => {
            let idp = m.enterprise.as_ref().ok_or_else(|| {
                Error::usage(
                    "\"grant\": \"enterprise\" needs 'idp_token_endpoint'",
                )
            })?;
            let id_token = assertion()?;
            // The ID-JAG is addressed to the authorization server.
            let audience = ep.issuer.clone().ok_or_else(|| {
                Error::new(
                    Kind::Auth,
                    "enterprise-managed authorization needs the \
                     authorization server's metadata (its issuer)",
                )
            })?;
            let jag = machine::id_jag(
                idp, id_token, &audience, resource, scope, req.lookup, &d,
            )?;
            machine::jwt_bearer(
                &ep.token, &client, &jag, scope, resource, proofs, &d,
            )?
        }
        Grant::ClientCredentials
        | Grant::AuthorizationCode
        | Grant::DeviceCode => {
            let mut params = vec![("grant_type", "client_credentials")];
            if let Some(s) = scope {
                params.push(("scope", s));
            }
            params.push(("resource", resource));
            token::request(&ep.token, &client, &params, proofs, &d)?
        }
    };
    Ok((tokens, identity))
}

/// The browser login: the authorization code with PKCE and `state`,
/// through the loopback callback (or, with `--no-browser`, the redirect
/// address pasted back), then the code exchange.
fn code_grant(
    req: &Request<'_>,
    plan: &Plan,
) -> Result<(token::Tokens, ClientIdentity)> {
    let (server, o, ep) = (req.server, req.oauth, &plan.ep);
    let p = pkce::Pkce::new()?;
    let listener = bind_listener(o, plan.stored.as_ref())?;
    let redirect_uri = listener.redirect_uri();
    let identity =
        plan.client(req, Some(&redirect_uri), "client registration")?;
    let mut params: Vec<(&str, &str)> = vec![
        ("response_type", "code"),
        ("client_id", &identity.id),
        ("redirect_uri", &redirect_uri),
        ("code_challenge", &p.challenge),
        ("code_challenge_method", "S256"),
        ("state", p.state.expose()),
    ];
    if let Some(s) = &plan.scope {
        params.push(("scope", s));
    }
    params.push(("resource", &plan.resource));
    let auth_url = format!("{}?{}", ep.authorization, callback::form(&params));
    journal::event(
        "authorization_started",
        json!({"server": server,
               "authorization_endpoint": ep.authorization.to_string(),
               "redirect_uri": redirect_uri, "scope": plan.scope}),
    );
    msg::line(&format!(
        "rivumi-mcp: to log in to '{server}', open this URL in a \
         browser:\n\n  {}\n",
        term::line(&auth_url)
    ));
    let paste = if req.no_browser {
        msg::line(
            "rivumi-mcp: then paste here the address the browser ended at \
             (or the code it shows), and press Enter:",
        );
        Some(callback::pasted_lines())
    } else {
        super::open_browser(&auth_url, req.lookup)?;
        None
    };
    let wait = Deadline::new("the login callback", req.callback_timeout);
    let issuer = ep.issuer.as_deref();
    let cb = listener.wait(
        p.state.expose(),
        issuer,
        ep.sends_iss,
        paste.as_ref(),
        &wait,
    )?;
    drop(listener);
    let d = Deadline::new("the token exchange", REQUEST_TIMEOUT);
    let tokens = token::request(
        &ep.token,
        &identity.as_client(),
        &[
            ("grant_type", "authorization_code"),
            ("code", cb.code.expose()),
            ("redirect_uri", &redirect_uri),
            ("code_verifier", p.verifier.expose()),
            ("resource", &plan.resource),
        ],
        plan.proofs(),
        &d,
    )?;
    Ok((tokens, identity))
}

/// The device authorization grant (RFC 8628; see [`device`]): no
/// listener, a code the person enters on another device.
fn device_grant(
    req: &Request<'_>,
    plan: &Plan,
) -> Result<(token::Tokens, ClientIdentity)> {
    let Some(endpoint) = &plan.ep.device else {
        return Err(Error::new(
            Kind::Auth,
            "the authorization server publishes no \
             device_authorization_endpoint, so the device login (RFC 8628) \
             cannot be used; log in with 'login --no-browser' and paste the \
             address back",
        ));
    };
    let identity = plan.client(req, None, "the device authorization")?;
    let p = pkce::Pkce::new()?;
    let mut params: Vec<(&str, &str)> = vec![];
    if let Some(s) = &plan.scope {
        params.push(("scope", s));
    }
    params.push(("resource", &plan.resource));
    params.push(("code_challenge", &p.challenge));
    params.push(("code_challenge_method", "S256"));
    let d = Deadline::new("the device authorization", REQUEST_TIMEOUT);
    let started = device::start(endpoint, &identity.as_client(), &params, &d)?;
    journal::event(
        "device_authorization_started",
        json!({"server": req.server,
               "device_authorization_endpoint": endpoint.to_string(),
               "scope": plan.scope}),
    );
    msg::line(&started.instructions(req.server));
    let tokens = started.poll(
        &plan.ep.token,
        &identity.as_client(),
        &[
            ("code_verifier", p.verifier.expose()),
            ("resource", &plan.resource),
        ],
        plan.proofs(),
        req.callback_timeout,
    )?;
    Ok((tokens, identity))
}

/// Stores what a grant obtained, as the credential of the server.
fn keep(
    req: &Request<'_>,
    plan: Plan,
    tokens: token::Tokens,
    identity: ClientIdentity,
) -> Result<Credential> {
    // `"dpop": true` asks for a sender-constrained token: a Bearer answer
    // (an authorization server that ignored the proof) is refused, never
    // stored. With "auto", Bearer is fine.
    if req.oauth.machine.dpop == DpopMode::On && !tokens.dpop {
        return Err(Error::new(
            Kind::Auth,
            "\"dpop\" is on, but the authorization server issued a Bearer \
             token, not a DPoP-bound one; nothing stored (set \"dpop\": \
             \"auto\" to accept Bearer)",
        ));
    }
    let now = store::now();
    let Plan { url, resource, scope, stored, ep, dpop, store_path, .. } = plan;
    let cred = Credential {
        resource: (resource != url).then(|| resource.clone()),
        url,
        token_endpoint: ep.token.to_string(),
        issuer: ep.issuer,
        client_id: identity.id.clone(),
        access_token: tokens.access_token,
        refresh_token: tokens.refresh_token,
        expires_at: token::expires_at(tokens.expires_in, now),
        scope: tokens.scope.or(scope),
        obtained_at: now,
        other_registrations: other_registrations(
            stored.as_ref(),
            identity.registration.as_ref(),
        ),
        registration: identity.registration.clone(),
        auth_method: Some(identity.method.name().to_string()),
        dpop_key: dpop.filter(|_| tokens.dpop).map(|(k, _)| k),
    };
    store::put(&store_path, req.server, cred.clone())?;
    journal::event(
        "login_completed",
        json!({"server": req.server, "url": cred.url,
               "expires_at": cred.expires_at,
               "refresh_token": cred.refresh_token.is_some()}),
    );
    Ok(cred)
}

impl ClientIdentity {
    pub(crate) fn as_client(&self) -> token::Client<'_> {
        token::Client {
            id: &self.id,
            secret: self.secret.as_ref(),
            method: self.method,
            key: self.key.as_ref().map(|(k, _)| k.as_ref()),
            audience: self.key.as_ref().map(|(_, a)| a.as_str()),
        }
    }
}

/// When a refresh redeems the refresh token. The decision is taken under
/// the credential file's lock, against the entry as it is then, so that
/// of many processes that found one expired (or refused) token, one
/// redeems and the others use what it stored.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Redeem<'a> {
    /// Always: `login --refresh`.
    Always,
    /// Only when the stored access token has expired.
    IfExpired,
    /// Only when the stored access token is still this one (the one a
    /// server just refused).
    IfStill(&'a str),
}

/// `login --refresh`: exchanges the stored refresh token, under the
/// credential file's lock (so two refreshes of one entry cannot lose a
/// rotated token), storing the rotated refresh token with the new access
/// token before it is used.
pub(crate) fn refresh(
    server: &str,
    http: &Http,
    oauth: &OAuth,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Credential> {
    redeem(server, http, oauth, lookup, Redeem::Always)
}

/// The refresh of `"refresh": "auto"` (and `login --refresh`): under the
/// credential file's lock, redeems the refresh token when `when` says the
/// stored token still needs it, else returns the stored entry as it is
/// (and the file is not rewritten). A failed refresh changes nothing.
pub(crate) fn redeem(
    server: &str,
    http: &Http,
    oauth: &OAuth,
    lookup: &dyn Fn(&str) -> Option<String>,
    when: Redeem<'_>,
) -> Result<Credential> {
    let path = store::path(lookup)?;
    let url = http.url.to_string();
    store::transact_if(&path, |entries| {
        let Some((_, c)) = entries.iter_mut().find(|(k, _)| k == server)
        else {
            return Err(Error::new(
                Kind::Auth,
                format!(
                    "no credential is stored; run 'rivumi-mcp login {server}'"
                ),
            ));
        };
        let still_needed = match when {
            Redeem::Always => true,
            Redeem::IfExpired => c.expired(store::now()),
            Redeem::IfStill(refused) => c.access_token.expose() == refused,
        };
        if !still_needed && c.url == url {
            msg::debug(&format!(
                "server '{server}': the stored token was refreshed meanwhile; \
                 using it"
            ));
            return Ok((c.clone(), false));
        }
        redeem_entry(server, c, &url, oauth, lookup)?;
        Ok((c.clone(), true))
    })
}

/// Redeems the refresh token of the entry `c` of `server` at `url` and
/// updates `c` with the answer (only once it has succeeded).
fn redeem_entry(
    server: &str,
    c: &mut Credential,
    url: &str,
    oauth: &OAuth,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<()> {
    if c.url != url {
        return Err(Error::new(
            Kind::Auth,
            format!(
                "the stored credential is for {}, not {url}; run \
                 'rivumi-mcp login {server}'",
                term::line(&c.url)
            ),
        ));
    }
    let Some(rt) = c.refresh_token.clone() else {
        return Err(Error::new(
            Kind::Auth,
            format!(
                "the stored credential has no refresh token; run \
                 'rivumi-mcp login {server}'"
            ),
        ));
    };
    let endpoint = Url::parse(&c.token_endpoint)
        .map_err(|e| Error::server(format!("stored token endpoint: {e}")))?;
    let identity = stored_identity(server, c, &endpoint, oauth, lookup)?;
    // A DPoP-bound token is refreshed with proofs of its own key.
    let dpop = match &c.dpop_key {
        Some(k) => Some(Dpop::new(keys::stored_p256(k)?)?),
        None => None,
    };
    let d = Deadline::new("the token refresh", REQUEST_TIMEOUT);
    let tokens = token::request(
        &endpoint,
        &identity.as_client(),
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", rt.expose()),
            ("resource", c.resource.as_deref().unwrap_or(url)),
        ],
        dpop.as_ref(),
        &d,
    )?;
    if c.dpop_key.is_some() && !tokens.dpop {
        // `"dpop": true` asks for a bound token, at refresh as at login: a
        // Bearer answer is refused and nothing is changed.
        if oauth.machine.dpop == DpopMode::On {
            return Err(Error::new(
                Kind::Auth,
                "\"dpop\" is on, but the refresh returned a Bearer token, \
                 not a DPoP-bound one; the stored credential is unchanged",
            ));
        }
        // Bound before, Bearer now ("auto"): the key no longer applies.
        c.dpop_key = None;
    }
    let now = store::now();
    c.access_token = tokens.access_token;
    if let Some(new_rt) = tokens.refresh_token {
        c.refresh_token = Some(new_rt);
    }
    c.expires_at = token::expires_at(tokens.expires_in, now);
    if tokens.scope.is_some() {
        c.scope = tokens.scope;
    }
    c.obtained_at = now;
    journal::event(
        "token_refreshed",
        json!({"server": server, "expires_at": c.expires_at}),
    );
    Ok(())
}

/// The client that obtained the stored entry `c`, to present again at
/// `endpoint`: its dynamic registration (only where it was made), its
/// key (`private_key_jwt`), or the configured client by the method the
/// login used.
fn stored_identity(
    server: &str,
    c: &Credential,
    endpoint: &Url,
    oauth: &OAuth,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ClientIdentity> {
    let secret = match &oauth.client_secret_env_var {
        Some(var) => lookup(var).filter(|v| !v.is_empty()).map(Secret::new),
        None => None,
    };
    let stored_method = c.auth_method.as_deref().and_then(AuthMethod::parse);
    let public = || ClientIdentity {
        id: c.client_id.clone(),
        secret: None,
        method: AuthMethod::None,
        registration: None,
        key: None,
    };
    Ok(match c.registration.as_ref() {
        Some(reg) if !bound_to(reg, c.issuer.as_deref(), endpoint) => {
            return Err(Error::new(
                Kind::Auth,
                format!(
                    "the stored dynamic registration was not made at the \
                     token endpoint {endpoint}; it is not presented there \
                     (run 'rivumi-mcp login {server}')"
                ),
            ));
        }
        Some(reg) => registration_identity(reg, &[]).unwrap_or_else(public),
        None if stored_method == Some(AuthMethod::PrivateKeyJwt) => {
            let path =
                oauth.machine.client_key_file.as_ref().ok_or_else(|| {
                    Error::usage(
                        "the credential was obtained with private_key_jwt; \
                         the oauth block no longer names 'client_key_file'",
                    )
                })?;
            let audience =
                c.issuer.clone().unwrap_or_else(|| endpoint.to_string());
            key_identity(&c.client_id, path, &[], audience)?
        }
        None => ClientIdentity {
            // The method the login used; older entries: Basic.
            method: match (&secret, stored_method) {
                (None, _) => AuthMethod::None,
                (Some(_), Some(m)) => m,
                (Some(_), None) => AuthMethod::ClientSecretBasic,
            },
            secret,
            ..public()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_selection_order() {
        let v =
            |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            scopes(&v(&["a"]), None, None, None, &v(&["b"]), &[], false)
                .as_deref(),
            Some("a")
        );
        assert_eq!(
            scopes(&[], Some("c d"), None, None, &v(&["b"]), &[], false)
                .as_deref(),
            Some("c d")
        );
        assert_eq!(
            scopes(&[], None, None, None, &v(&["b"]), &[], false).as_deref(),
            Some("b")
        );
        assert_eq!(scopes(&[], None, None, None, &[], &[], false), None);
        let off = v(&["x", "offline_access"]);
        assert_eq!(
            scopes(&[], None, None, None, &v(&["b"]), &off, true).as_deref(),
            Some("b offline_access")
        );
        assert_eq!(
            scopes(&[], None, None, None, &v(&["b"]), &v(&["b"]), true)
                .as_deref(),
            Some("b")
        );
        assert_eq!(
            scopes(&[], None, None, None, &v(&["b"]), &off, false).as_deref(),
            Some("b")
        );
        // Configured scopes win over a probe's challenge; a step-up adds.
        assert_eq!(
            scopes(&v(&["a"]), Some("x"), None, None, &[], &[], false)
                .as_deref(),
            Some("a")
        );
        assert_eq!(
            scopes(&v(&["a"]), Some("x"), Some("x y"), None, &[], &[], false)
                .as_deref(),
            Some("a x y")
        );
    }

    #[test]
    fn step_up_asks_for_the_union_with_what_was_granted() {
        // A step-up challenged for `asked`, after `granted`, at an
        // authorization server listing `as_scopes`, with offline_access.
        let v =
            |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let step = |asked: &str, granted: &str, as_scopes: &[&str]| {
            let as_scopes = v(as_scopes);
            let (c, g) = (Some(asked), Some(granted));
            scopes(&[], c, c, g, &[], &as_scopes, true)
        };
        // SEP-2350: granted, then the challenged scope; nothing twice.
        assert_eq!(
            step("mcp:write", "mcp:basic", &[]).as_deref(),
            Some("mcp:basic mcp:write")
        );
        assert_eq!(step("a b", "b c", &[]).as_deref(), Some("b c a"));
        // A refusal that names no scope: what was granted, and what the
        // resource lists.
        let s = scopes(&[], None, None, Some("b"), &v(&["a"]), &[], false);
        assert_eq!(s.as_deref(), Some("b a"));
        // A granted offline_access is asked for again only where listed.
        let off = "r offline_access";
        assert_eq!(step("w", off, &["r", "w"]).as_deref(), Some("r w"));
        assert_eq!(
            step("w", off, &["offline_access"]).as_deref(),
            Some("r w offline_access")
        );
    }

    #[test]
    fn a_registration_is_bound_to_where_it_was_made() {
        let url = |u: &str| Url::parse(u).unwrap();
        let reg = |iss: Value, tok: &str| json!({"client_id": "c", "issuer": iss, "token_endpoint": tok});
        let a = reg(json!("https://a.example/"), "https://a.example/token");
        let tok = url("https://a.example/token");
        assert!(bound_to(&a, Some("https://a.example/"), &tok));
        assert!(!bound_to(&a, Some("https://b.example/"), &tok));
        assert!(!bound_to(&a, None, &tok));
        let moved = url("https://a.example/oauth/token");
        assert!(!bound_to(&a, Some("https://a.example/"), &moved));
        // Without an issuer: the token endpoint's origin.
        let n = reg(Value::Null, "http://127.0.0.1:8000/token");
        assert!(bound_to(&n, None, &url("http://127.0.0.1:8000/t2")));
        assert!(!bound_to(&n, None, &url("http://127.0.0.1:8001/token")));
        assert!(!bound_to(
            &n,
            Some("http://127.0.0.1:8000/"),
            &url("http://127.0.0.1:8000/token")
        ));
        // Stored before the binding was recorded: bound to nothing.
        let old = json!({"client_id": "c", "issuer": null});
        assert!(!bound_to(&old, None, &url("http://127.0.0.1:8000/token")));
    }

    #[test]
    fn challenge_parse() {
        let c = Bearer::from_header(
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/y""#,
        );
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.resource_metadata.as_deref(), Some("https://x/y"));
    }
}
