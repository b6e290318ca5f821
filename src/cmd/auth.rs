//! `login`, `logout`, `discover` and `status`: the commands of
//! operator-configured OAuth. The flow, the credential store and discovery
//! are the `auth` library's; this module only picks the server, runs them
//! and prints.

use std::time::Duration;

use serde_json::{Value, json};

use crate::auth::token::AuthMethod;
use crate::auth::{DEFAULT_CALLBACK_TIMEOUT, discovery, flow, store};
use crate::config::{Grant, Http, OAuth, Transport};
use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::launch::Context;
use crate::urlcheck::Url;
use crate::{journal, out, term, www_auth};

/// The HTTP entry and its `oauth` block of an allowed server.
fn oauth_entry<'a>(
    ctx: &'a Context,
    server: &str,
) -> Result<(&'a Http, &'a OAuth)> {
    let s = ctx.startable(server)?;
    let Transport::Http(h) = &s.transport else {
        return Err(Error::usage(format!(
            "'{server}' is a stdio server; login applies to HTTP servers \
             (stdio servers take credentials from their environment)"
        )));
    };
    let Some(o) = &h.oauth else {
        return Err(Error::usage(format!(
            "'{server}' has no \"oauth\" block; add one (rivumi-mcp discover \
             {server} shows what to write)"
        )));
    };
    Ok((h, o))
}

/// `rivumi-mcp login SERVER [--refresh]`.
pub(crate) fn login(
    ctx: &Context,
    server: &str,
    opts: LoginOptions,
    json: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<()> {
    let (h, o) = oauth_entry(ctx, server)?;
    let grant = login_grant(server, o, opts)?;
    let store_path = store::path(lookup)?;
    // Fail on an unusable credential file before any network round trip.
    store::load(&store_path)?;
    let cred = if opts.refresh {
        flow::refresh(server, h, o, lookup)
            .map_err(|e| e.for_server(server))?
    } else {
        flow::authorize(flow::Request {
            server,
            http: h,
            oauth: o,
            challenge: None,
            grant,
            no_browser: opts.no_browser,
            callback_timeout: opts.timeout.unwrap_or(DEFAULT_CALLBACK_TIMEOUT),
            lookup,
        })
        .map_err(|e| e.for_server(server))?
    };
    let url = &cred.url;
    if json {
        return out::json(&json!({
            "server": server, "logged_in": true, "url": url,
            "expires_at": cred.expires_at, "scope": cred.scope,
            "refresh_token": cred.refresh_token.is_some(),
            "credentials": store_path.display().to_string(),
        }));
    }
    out::print(&format!(
        "{} '{server}' ({url}){}; credential stored in {}\n",
        if opts.refresh { "refreshed the token of" } else { "logged in to" },
        match cred.expires_at {
            Some(t) => format!(
                ", token expires {}",
                crate::journal::timestamp(
                    std::time::UNIX_EPOCH + Duration::from_secs(t)
                )
            ),
            None => String::new(),
        },
        store_path.display()
    ))
}

/// The grant a login runs: the block's, or the device grant for
/// `--device` (which only replaces the browser login).
fn login_grant(server: &str, o: &OAuth, opts: LoginOptions) -> Result<Grant> {
    if !opts.device {
        return Ok(o.grant);
    }
    if opts.refresh || opts.no_browser {
        return Err(Error::usage(format!(
            "--device is a login of its own; give it without {}",
            if opts.refresh { "--refresh" } else { "--no-browser" }
        )));
    }
    match o.grant {
        Grant::AuthorizationCode | Grant::DeviceCode => Ok(Grant::DeviceCode),
        g @ (Grant::ClientCredentials
        | Grant::JwtBearer
        | Grant::Enterprise) => Err(Error::usage(format!(
            "'{server}' logs in with \"grant\": \"{}\", without a \
                 person; --device applies to a person's login",
            g.name()
        ))),
    }
}

/// What `login` was asked to do.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoginOptions {
    pub(crate) no_browser: bool,
    pub(crate) refresh: bool,
    /// `--device`: the device authorization grant.
    pub(crate) device: bool,
    pub(crate) timeout: Option<Duration>,
}

/// `rivumi-mcp logout SERVER`.
pub(crate) fn logout(
    server: &str,
    json: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<()> {
    let path = store::path(lookup)?;
    let found = store::remove(&path, server)?;
    journal::event("logout", json!({"server": server, "removed": found}));
    if json {
        return out::json(&json!({"server": server, "removed": found}));
    }
    out::print(&if found {
        format!(
            "removed the credential of '{server}' from {}\n",
            path.display()
        )
    } else {
        format!("no credential stored for '{server}'\n")
    })
}

/// What `discover` says of a server that asked for no authorization.
fn no_authorization(
    server: &str,
    h: &crate::config::Http,
    status: u16,
    json: bool,
) -> Result<()> {
    if json {
        return out::json(&json!({
            "server": server, "url": h.url.to_string(), "status": status,
            "authorization_required": false,
        }));
    }
    out::print(&format!(
        "server '{server}' ({})\n  unauthenticated request: HTTP {status}\n  \
         no authorization required: the server answered without a \
         challenge and publishes no protected-resource metadata; no \
         \"oauth\" block is needed\n",
        h.url
    ))
}

/// What `discover` found of an HTTP server that asks for authorization.
struct Found {
    /// The status of the unauthenticated request.
    status: u16,
    /// The challenges of its answer.
    challenges: Vec<www_auth::Challenge>,
    /// The protected resource's metadata.
    res: discovery::Resource,
    /// Each authorization server the metadata names: its metadata, or
    /// why there is none.
    servers: Vec<(String, Result<discovery::AuthServer>)>,
    /// The `oauth` block to start from.
    suggested: Value,
}

/// `rivumi-mcp discover SERVER`: read-only; prints what an operator needs
/// to write the `oauth` block.
pub(crate) fn discover(ctx: &Context, server: &str, json: bool) -> Result<()> {
    let s = ctx.startable(server)?;
    let Transport::Http(h) = &s.transport else {
        return Err(Error::usage(format!("'{server}' is not an HTTP server")));
    };
    let d = Deadline::new("discovery", flow::REQUEST_TIMEOUT);
    let (status, header) =
        flow::probe(&h.url, &d).map_err(|e| e.for_server(server))?;
    let challenges = www_auth::parse(&header);
    let bearer = challenges.iter().find(|c| c.scheme == "bearer");
    let hint = bearer.and_then(|c| c.param("resource_metadata"));
    let challenge_scope =
        bearer.and_then(|c| c.param("scope")).map(str::to_string);
    let reach = crate::net::Reach::of(&h.url, &ctx.lookup);
    let res = match discovery::resource(&h.url, hint, &reach, &d) {
        Ok(res) => res,
        // Answered without a challenge and publishes no metadata: the
        // server needs no authorization, which is an answer, not a fault.
        Err(_) if (200..300).contains(&status) && bearer.is_none() => {
            return no_authorization(server, h, status, json);
        }
        Err(e) => return Err(e.for_server(server)),
    };
    let servers = auth_servers(&res, &reach, &d);
    let suggested =
        suggested_oauth(challenge_scope.as_deref(), &res, &servers);
    let found = Found { status, challenges, res, servers, suggested };
    if json {
        return out::json(&found_json(server, h, &found));
    }
    out::print(&found_text(server, h, &found))
}

/// The metadata of each authorization server `res` names, or why there
/// is none.
fn auth_servers(
    res: &discovery::Resource,
    reach: &crate::net::Reach,
    d: &Deadline,
) -> Vec<(String, Result<discovery::AuthServer>)> {
    let mut servers = vec![];
    for iss in &res.authorization_servers {
        let r = Url::parse(iss)
            .map_err(|e| {
                Error::server(format!(
                    "authorization server '{}': {e}",
                    term::line(iss)
                ))
            })
            .and_then(|u| discovery::auth_server(&u, reach, d));
        servers.push((iss.clone(), r));
    }
    servers
}

/// The `oauth` block `discover` suggests: the challenge's scopes (else
/// the resource's) and the first authorization server that answered.
fn suggested_oauth(
    challenge_scope: Option<&str>,
    res: &discovery::Resource,
    servers: &[(String, Result<discovery::AuthServer>)],
) -> Value {
    let scopes: Vec<String> = match challenge_scope {
        Some(s) => s
            .split(' ')
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect(),
        None => res.scopes_supported.clone(),
    };
    let first_ok = servers.iter().find_map(|(_, r)| r.as_ref().ok());
    json!({
        "client_id": "<the client id registered for rivumi-mcp>",
        "authorization_server": first_ok.map(|a| a.published_issuer.clone()),
        "scopes": scopes,
        "redirect_port": 8976,
    })
}

/// `discover --json`.
fn found_json(server: &str, h: &Http, f: &Found) -> Value {
    let as_json: Vec<Value> = f
        .servers
        .iter()
        .map(|(iss, r)| match r {
            Ok(a) => json!({"issuer": iss, "ok": true, "source": a.source, "metadata": a.document}),
            Err(e) => json!({"issuer": iss, "ok": false, "error": e.to_string()}),
        })
        .collect();
    json!({
        "server": server, "url": h.url.to_string(), "status": f.status,
        "challenges": f.challenges.iter().map(|c| json!({"scheme": c.scheme,
            "params": c.params.iter().map(|(k, v)| (k.clone(), json!(v)))
                .collect::<serde_json::Map<_, _>>()}))
            .collect::<Vec<_>>(),
        "resource_metadata": {"source": f.res.source, "document": f.res.document},
        "authorization_servers": as_json,
        "suggested_oauth": f.suggested,
    })
}

/// `discover` for a person: the probe, the resource's metadata, each
/// authorization server's, and the suggested block.
fn found_text(server: &str, h: &Http, f: &Found) -> String {
    let res = &f.res;
    let mut t = format!("server '{server}' ({})\n", h.url);
    t.push_str(&format!("  unauthenticated request: HTTP {}\n", f.status));
    if !f.challenges.is_empty() {
        t.push_str(&format!(
            "  challenge: {}\n",
            www_auth::describe(&f.challenges)
        ));
    }
    t.push_str(&format!(
        "  protected resource metadata ({}):\n",
        out::shown(&res.source)
    ));
    t.push_str(&format!("    resource: {}\n", out::shown(&res.resource)));
    t.push_str(&format!(
        "    authorization_servers: {}\n",
        out::shown(&res.authorization_servers.join(", "))
    ));
    if !res.scopes_supported.is_empty() {
        t.push_str(&format!(
            "    scopes_supported: {}\n",
            out::shown(&res.scopes_supported.join(" "))
        ));
    }
    for (iss, r) in &f.servers {
        match r {
            Ok(a) => {
                t.push_str(&format!(
                    "  authorization server {} ({}):\n",
                    out::shown(iss),
                    out::shown(&a.source)
                ));
                t.push_str(&metadata_lines(&a.document));
            }
            Err(e) => t.push_str(&format!(
                "  authorization server {}: {}\n",
                out::shown(iss),
                out::shown(&e.to_string())
            )),
        }
    }
    t.push_str("  suggested \"oauth\" block (fill in client_id; redirect_port only if your registration needs a fixed one):\n");
    for l in
        serde_json::to_string_pretty(&f.suggested).unwrap_or_default().lines()
    {
        t.push_str(&format!("    {}\n", out::shown(l)));
    }
    t
}

/// The lines of an authorization server's metadata an operator needs.
fn metadata_lines(document: &Value) -> String {
    let mut t = String::new();
    for k in [
        "authorization_endpoint",
        "token_endpoint",
        "registration_endpoint",
        "code_challenge_methods_supported",
        "token_endpoint_auth_methods_supported",
        "scopes_supported",
        "authorization_response_iss_parameter_supported",
        "client_id_metadata_document_supported",
    ] {
        if let Some(v) = document.get(k) {
            let v = match v {
                Value::String(s) => s.clone(),
                Value::Array(a) => a
                    .iter()
                    .map(|x| {
                        x.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| x.to_string())
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
                other => other.to_string(),
            };
            t.push_str(&format!("    {k}: {}\n", out::shown(&v)));
        }
    }
    t
}

/// How a server's credential is obtained and presented (names only): the
/// grant, the client authentication (other than `none`) of the stored
/// credential or else the configured one, and whether the stored token
/// is DPoP-bound.
fn method<'a>(
    h: &'a crate::config::Http,
    c: Option<&'a store::Credential>,
) -> (&'static str, Option<&'a str>, bool) {
    let Some(o) = &h.oauth else { return ("-", None, false) };
    let configured = o
        .machine
        .client_key_file
        .is_some()
        .then_some(AuthMethod::PrivateKeyJwt.name());
    let client_auth = c
        .and_then(|c| c.auth_method.as_deref())
        .filter(|m| *m != AuthMethod::None.name())
        .or(configured);
    let dpop = c.is_some_and(|c| c.dpop_key.is_some());
    (o.grant.name(), client_auth, dpop)
}

/// `rivumi-mcp status`: which servers have a stored credential, for which
/// URL, how it is obtained and presented, and until when. Never the token.
pub(crate) fn status(
    ctx: &Context,
    json: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<()> {
    let path = store::path(lookup)?;
    let entries = store::load(&path)?;
    let now = store::now();
    let mut rows = vec![vec![
        "SERVER".to_string(),
        "AUTH".to_string(),
        "METHOD".to_string(),
        "CREDENTIAL".to_string(),
        "EXPIRES".to_string(),
        "URL".to_string(),
    ]];
    let mut list = vec![];
    for e in &ctx.config.entries {
        let Some(s) = &e.server else { continue };
        let Transport::Http(h) = &s.transport else { continue };
        let url = h.url.to_string();
        let c = entries.iter().find(|(k, _)| *k == e.name).map(|(_, c)| c);
        let state = match c {
            None => "none",
            Some(c) if c.url != url => "other URL",
            Some(c) if c.expired(now) => "expired",
            Some(_) => "stored",
        };
        let expires = c.and_then(|c| c.expires_at).map(|t| {
            crate::journal::timestamp(
                std::time::UNIX_EPOCH + Duration::from_secs(t),
            )
        });
        let (grant, client_auth, dpop) = method(h, c);
        let shown_method = match &h.oauth {
            None => "-".to_string(),
            Some(_) => [Some(grant), client_auth, dpop.then_some("dpop")]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("+"),
        };
        rows.push(vec![
            out::shown(&e.name).into_owned(),
            s.auth_mode().to_string(),
            shown_method,
            state.to_string(),
            expires.clone().unwrap_or_else(|| "-".into()),
            c.map(|c| c.url.clone()).unwrap_or_else(|| url.clone()),
        ]);
        list.push(json!({"server": e.name, "auth": s.auth_mode(), "credential": state,
            "expires_at": c.and_then(|c| c.expires_at), "url": c.map(|c| c.url.clone()),
            "configured_url": url, "issuer": c.and_then(|c| c.issuer.clone()),
            "refresh_token": c.map(|c| c.refresh_token.is_some()),
            "grant": h.oauth.as_ref().map(|_| grant), "client_auth": client_auth,
            "dpop": dpop}));
    }
    if json {
        return out::json(
            &json!({"credentials": path.display().to_string(), "servers": list}),
        );
    }
    let mut t = out::table(&rows);
    t.push_str(&format!("credentials: {}\n", path.display()));
    out::print(&t)
}
