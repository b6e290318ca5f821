//! Finding the authorization server: RFC 8414 / OpenID Connect metadata
//! and RFC 9728 protected-resource metadata.
//!
//! Every URL fetched follows the config's URL rules (`https`, or `http` to
//! loopback; no credentials, query or fragment); no redirect is followed;
//! every answer is capped. What a remote server names (the 401's
//! `resource_metadata`, its authorization servers and their endpoints) is
//! held to a [`Reach`]: it may not point inside unless the server is. An authorization server's document must name
//! the issuer we asked for, and must support PKCE with S256 (MCP
//! 2025-11-25): otherwise we stop before any authorization request. A
//! protected resource's document must name the server's own URL.
//!
//! Two identifiers are kept exactly as they were published, because
//! others compare them as strings: the authorization server's `issuer`
//! (RFC 9207 `iss` is compared with it byte for byte) and the protected
//! resource's `resource` (sent as the RFC 8707 `resource`). A parsed
//! [`Url`] is canonical (a pathless URL gains `/`, host case and default
//! ports are folded), so it is used to fetch and to compare origins, never
//! in place of those strings.

use serde_json::{Map, Value};

use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::net::{self, Reach};
use crate::urlcheck::Url;

/// What we use of an authorization server's metadata.
#[derive(Debug, Clone)]
pub(crate) struct AuthServer {
    /// The metadata's `issuer`, as published (it names the issuer asked
    /// for, RFC 8414 §3.3): what an `iss` must equal.
    pub(crate) published_issuer: String,
    pub(crate) authorization_endpoint: Url,
    pub(crate) token_endpoint: Url,
    pub(crate) registration_endpoint: Option<Url>,
    /// `token_endpoint_auth_methods_supported`; RFC 8414's default is
    /// `client_secret_basic` when absent.
    pub(crate) auth_methods: Vec<String>,
    /// RFC 9207: the AS sends `iss` in authorization responses.
    pub(crate) sends_iss: bool,
    pub(crate) scopes_supported: Vec<String>,
    pub(crate) client_id_metadata_document_supported: bool,
    /// Where the document was found, and the document itself (for
    /// `discover`).
    pub(crate) source: String,
    pub(crate) document: Value,
}

/// The well-known URLs for an issuer, in the order MCP 2025-11-25 gives:
/// with a path, OAuth path insertion, OIDC path insertion, OIDC path
/// appending; without one, OAuth then OIDC.
pub(crate) fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path.trim_end_matches('/');
    if path.is_empty() {
        vec![
            issuer.with_path("/.well-known/oauth-authorization-server"),
            issuer.with_path("/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            issuer.with_path(&format!(
                "/.well-known/oauth-authorization-server{path}"
            )),
            issuer.with_path(&format!(
                "/.well-known/openid-configuration{path}"
            )),
            issuer.with_path(&format!(
                "{path}/.well-known/openid-configuration"
            )),
        ]
    }
}

fn strings(m: &Map<String, Value>, k: &str) -> Vec<String> {
    m.get(k)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter().filter_map(Value::as_str).map(str::to_string).collect()
        })
        .unwrap_or_default()
}

/// An endpoint from a metadata document, checked like a configured URL.
pub(crate) fn endpoint(
    m: &Map<String, Value>,
    k: &str,
    what: &str,
) -> Result<Option<Url>> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Url::parse(s).map(Some).map_err(|e| {
            Error::server(format!("{what}: '{k}' is not acceptable: {e}"))
        }),
        Some(_) => {
            Err(Error::server(format!("{what}: '{k}' is not a string")))
        }
    }
}

/// Checks one metadata document against the issuer we asked for.
pub(crate) fn check_metadata(
    issuer: &Url,
    m: &Map<String, Value>,
    source: &str,
) -> Result<AuthServer> {
    let what = format!("authorization server metadata at {source}");
    let doc_issuer = m.get("issuer").and_then(Value::as_str).unwrap_or("");
    let same = Url::parse(doc_issuer).is_ok_and(|u| u == *issuer);
    if !same {
        return Err(Error::server(format!(
            "{what}: its issuer '{}' is not the issuer '{issuer}' asked for; \
             refusing it (RFC 8414 §3.3)",
            crate::term::clip(&crate::term::line(doc_issuer), 200)
        )));
    }
    let methods = strings(m, "code_challenge_methods_supported");
    if !methods.iter().any(|x| x == "S256") {
        return Err(Error::server(format!(
            "{what}: the authorization server does not list S256 in \
             code_challenge_methods_supported, so PKCE cannot be used; \
             refusing to log in (MCP 2025-11-25)"
        )));
    }
    let authorization_endpoint = endpoint(m, "authorization_endpoint", &what)?
        .ok_or_else(|| {
            Error::server(format!("{what}: no authorization_endpoint"))
        })?;
    let token_endpoint = endpoint(m, "token_endpoint", &what)?
        .ok_or_else(|| Error::server(format!("{what}: no token_endpoint")))?;
    let mut auth_methods = strings(m, "token_endpoint_auth_methods_supported");
    if auth_methods.is_empty() {
        auth_methods.push("client_secret_basic".to_string());
    }
    Ok(AuthServer {
        published_issuer: doc_issuer.to_string(),
        authorization_endpoint,
        token_endpoint,
        registration_endpoint: endpoint(m, "registration_endpoint", &what)?,
        auth_methods,
        sends_iss: m.get("authorization_response_iss_parameter_supported")
            == Some(&Value::Bool(true)),
        scopes_supported: strings(m, "scopes_supported"),
        client_id_metadata_document_supported: m
            .get("client_id_metadata_document_supported")
            == Some(&Value::Bool(true)),
        source: source.to_string(),
        document: Value::Object(m.clone()),
    })
}

/// Fetches a JSON object with GET; `Ok(None)` for a non-200 answer (with
/// the status noted in `tried`). A redirect is an error.
fn fetch(
    url: &Url,
    tried: &mut Vec<String>,
    deadline: &Deadline,
) -> Result<Option<Map<String, Value>>> {
    let shown = url.to_string();
    let a = net::request(
        "GET",
        url,
        &[("accept", "application/json".to_string())],
        None,
        deadline,
    )?;
    if let Some(e) = a.redirect_error(&shown) {
        return Err(e);
    }
    if a.status != 200 {
        tried.push(format!("{shown} (HTTP {})", a.status));
        return Ok(None);
    }
    a.json_object(&shown).map(Some)
}

/// Holds the endpoints of `a` (from its metadata) to `reach`.
fn check_endpoints(a: &AuthServer, reach: &Reach) -> Result<()> {
    let what =
        format!("the authorization server's (metadata at {})", a.source);
    reach.check(
        &a.authorization_endpoint,
        &format!("{what} authorization_endpoint"),
    )?;
    reach.check(&a.token_endpoint, &format!("{what} token_endpoint"))?;
    if let Some(r) = &a.registration_endpoint {
        reach.check(r, &format!("{what} registration_endpoint"))?;
    }
    Ok(())
}

/// Discovers an authorization server's metadata from its issuer URL, the
/// issuer and the endpoints held to `reach`.
pub(crate) fn auth_server(
    issuer: &Url,
    reach: &Reach,
    deadline: &Deadline,
) -> Result<AuthServer> {
    let (found, tried) = try_auth_server(issuer, reach, deadline)?;
    found.ok_or_else(|| {
        Error::server(format!(
            "no authorization server metadata for issuer {issuer}; tried {}",
            tried.join(", ")
        ))
    })
}

/// Like [`auth_server`], but `Ok(None)` (with what was tried) when no
/// well-known URL has a document.
pub(crate) fn try_auth_server(
    issuer: &Url,
    reach: &Reach,
    deadline: &Deadline,
) -> Result<(Option<AuthServer>, Vec<String>)> {
    // The well-known URLs are on the issuer's origin: one check holds them.
    reach.check(issuer, "authorization server")?;
    let mut tried = vec![];
    for url in metadata_urls(issuer) {
        if let Some(m) = fetch(&url, &mut tried, deadline)? {
            let a = check_metadata(issuer, &m, &url.to_string())?;
            check_endpoints(&a, reach)?;
            return Ok((Some(a), tried));
        }
    }
    Ok((None, tried))
}

/// What a protected resource says about itself (RFC 9728).
#[derive(Debug, Clone)]
pub(crate) struct Resource {
    /// As published: the RFC 8707 `resource` to send.
    pub(crate) resource: String,
    pub(crate) authorization_servers: Vec<String>,
    pub(crate) scopes_supported: Vec<String>,
    pub(crate) source: String,
    pub(crate) document: Value,
}

/// The well-known protected-resource URLs of an MCP URL: path-suffixed,
/// then the root.
pub(crate) fn resource_urls(server: &Url) -> Vec<Url> {
    let path = server.path.trim_end_matches('/');
    let mut urls = vec![];
    if !path.is_empty() {
        urls.push(server.with_path(&format!(
            "/.well-known/oauth-protected-resource{path}"
        )));
    }
    urls.push(server.with_path("/.well-known/oauth-protected-resource"));
    urls
}

/// Whether a protected resource identifier covers the MCP server's URL:
/// the same origin, and a path that is the server's path or a prefix of
/// it on a segment boundary (RFC 9728 §3.3: metadata at the root
/// well-known URL describes the origin as a whole).
pub(crate) fn resource_covers(resource: &str, server: &Url) -> bool {
    let Ok(r) = Url::parse(resource) else { return false };
    if r.origin() != server.origin() {
        return false;
    }
    let rp = r.path.trim_end_matches('/');
    let sp = server.path.trim_end_matches('/');
    rp.is_empty() || sp == rp || sp.starts_with(&format!("{rp}/"))
}

/// The 2025-03-26 discovery: the authorization server's metadata at the
/// MCP server's origin. The document's own `issuer` is taken (it may add a
/// path), but only on that origin: the document was found there, so an
/// issuer elsewhere is unverified (RFC 8414 §3.3), and trusting it would
/// let the MCP server address our client assertions, ID-JAGs and the
/// RFC 9207 `iss` check to another authorization server (a mix-up). It
/// must also be an acceptable URL and support S256.
pub(crate) fn legacy_auth_server(
    server: &Url,
    reach: &Reach,
    deadline: &Deadline,
) -> Result<Option<AuthServer>> {
    let url = server.with_path("/.well-known/oauth-authorization-server");
    let mut tried = vec![];
    let Some(m) = fetch(&url, &mut tried, deadline)? else { return Ok(None) };
    let issuer = m.get("issuer").and_then(Value::as_str).unwrap_or("");
    let issuer = Url::parse(issuer).map_err(|e| {
        Error::server(format!(
            "metadata at {url}: issuer is not acceptable: {e}"
        ))
    })?;
    if issuer.origin() != server.origin() {
        return Err(Error::server(format!(
            "metadata at {url}: its issuer is on another origin ({}); an \
             authorization server found at the MCP server's origin must \
             be that origin's (configure \"authorization_server\" to use \
             another)",
            issuer.origin()
        )));
    }
    let a = check_metadata(&issuer, &m, &url.to_string())?;
    check_endpoints(&a, reach)?;
    Ok(Some(a))
}

/// Fetches protected-resource metadata: from `hint` (the 401's
/// `resource_metadata`) if given, else the well-known URLs in order.
pub(crate) fn resource(
    server: &Url,
    hint: Option<&str>,
    reach: &Reach,
    deadline: &Deadline,
) -> Result<Resource> {
    let (found, tried) = try_resource(server, hint, reach, deadline)?;
    found.ok_or_else(|| {
        Error::server(format!(
            "no protected resource metadata for {server}; tried {}",
            tried.join(", ")
        ))
    })
}

/// Like [`resource`], but `Ok(None)` (with what was tried) when no URL has
/// a document. A document whose `resource` is not the server's URL is an
/// error: nothing may be authorized for it.
pub(crate) fn try_resource(
    server: &Url,
    hint: Option<&str>,
    reach: &Reach,
    deadline: &Deadline,
) -> Result<(Option<Resource>, Vec<String>)> {
    let mut candidates: Vec<Url> = vec![];
    if let Some(h) = hint {
        let url = Url::parse(h).map_err(|e| {
            Error::server(format!(
                "the resource_metadata URL from the 401 is not acceptable: {e}"
            ))
        })?;
        reach.check(&url, "the resource_metadata URL from the 401")?;
        candidates.push(url);
    } else {
        candidates.extend(resource_urls(server));
    }
    let mut tried = vec![];
    for url in candidates {
        let Some(m) = fetch(&url, &mut tried, deadline)? else { continue };
        let shown = url.to_string();
        let res = m.get("resource").and_then(Value::as_str).unwrap_or("");
        if !resource_covers(res, server) {
            return Err(Error::server(format!(
                "protected resource metadata at {shown} is for '{}', not for \
                 {server}; refusing to authorize (RFC 9728 §3.3)",
                crate::term::clip(&crate::term::line(res), 200)
            )));
        }
        let r = Resource {
            resource: res.to_string(),
            authorization_servers: strings(&m, "authorization_servers"),
            scopes_supported: strings(&m, "scopes_supported"),
            source: shown,
            document: Value::Object(m),
        };
        return Ok((Some(r), tried));
    }
    Ok((None, tried))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn well_known_order() {
        let with = Url::parse("https://as.example.com/tenant1").unwrap();
        let urls: Vec<String> =
            metadata_urls(&with).iter().map(|u| u.to_string()).collect();
        assert_eq!(
            urls,
            [
                "https://as.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://as.example.com/.well-known/openid-configuration/tenant1",
                "https://as.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        let without = Url::parse("https://as.example.com").unwrap();
        assert_eq!(metadata_urls(&without).len(), 2);
        let r =
            resource_urls(&Url::parse("https://mcp.example.com/mcp").unwrap());
        assert_eq!(
            r[0].to_string(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            r[1].to_string(),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn resource_prefix_rules() {
        let s = Url::parse("https://mcp.example.com/mcp").unwrap();
        assert!(resource_covers("https://mcp.example.com/mcp", &s));
        assert!(resource_covers("https://mcp.example.com", &s));
        assert!(resource_covers("https://mcp.example.com/", &s));
        assert!(!resource_covers("https://mcp.example.com/mc", &s));
        assert!(!resource_covers("https://evil.example.com/mcp", &s));
        assert!(!resource_covers("https://mcp.example.com:444/mcp", &s));
        assert!(!resource_covers("not a url", &s));
        let deep = Url::parse("https://mcp.example.com/a/mcp").unwrap();
        assert!(resource_covers("https://mcp.example.com/a", &deep));
    }

    #[test]
    fn metadata_checks() {
        let iss = Url::parse("https://as.example.com").unwrap();
        let good = json!({"issuer": "https://as.example.com",
            "authorization_endpoint": "https://as.example.com/authorize",
            "token_endpoint": "https://as.example.com/token",
            "code_challenge_methods_supported": ["S256"]});
        let m = good.as_object().unwrap();
        let a = check_metadata(&iss, m, "x").unwrap();
        assert_eq!(a.auth_methods, ["client_secret_basic"]);
        // Kept as published, not as the canonical `https://as.example.com/`.
        assert_eq!(a.published_issuer, "https://as.example.com");
        let mut bad = m.clone();
        bad.insert("issuer".into(), json!("https://evil.example.com"));
        assert!(
            check_metadata(&iss, &bad, "x")
                .unwrap_err()
                .to_string()
                .contains("issuer")
        );
        let mut plain = m.clone();
        plain.insert(
            "code_challenge_methods_supported".into(),
            json!(["plain"]),
        );
        assert!(
            check_metadata(&iss, &plain, "x")
                .unwrap_err()
                .to_string()
                .contains("S256")
        );
        let mut http = m.clone();
        http.insert(
            "token_endpoint".into(),
            json!("http://as.example.com/token"),
        );
        assert!(check_metadata(&iss, &http, "x").is_err());
    }
}
