//! HTTP clients with rivumi-mcp's rules, for the transport and for OAuth.
//!
//! Every agent: never follows redirects (a 3xx comes back as a response so
//! the caller can refuse it by name), returns 4xx/5xx as values (a 401's
//! `WWW-Authenticate` must be readable), connects within 10 s, sends our
//! user agent. For a loopback URL no proxy is ever used, and `localhost` is
//! resolved here to its loopback addresses only, so a plain-http URL can
//! never reach anything but this machine.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use ureq::Agent;
use ureq::unversioned::resolver::{
    DefaultResolver, ResolvedSocketAddrs, Resolver,
};
use ureq::unversioned::transport::DefaultConnector;

use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::urlcheck::{Host, Url};

/// Resolves `localhost` to its loopback addresses only.
#[derive(Debug)]
struct LoopbackResolver(Vec<SocketAddr>);

impl Resolver for LoopbackResolver {
    fn resolve(
        &self,
        _uri: &ureq::http::Uri,
        _config: &ureq::config::Config,
        _timeout: ureq::unversioned::transport::NextTimeout,
    ) -> std::result::Result<ResolvedSocketAddrs, ureq::Error> {
        let mut out = self.empty();
        for a in self.0.iter().take(16) {
            out.push(*a);
        }
        Ok(out)
    }
}

/// An agent for requests to `url`'s origin.
pub(crate) fn agent_for(url: &Url) -> Result<Agent> {
    let mut config = Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(10)))
        .user_agent(format!("rivumi-mcp/{}", env!("CARGO_PKG_VERSION")))
        .max_response_header_size(64 * 1024);
    if url.is_loopback() {
        // Loopback traffic never goes through a proxy.
        config = config.proxy(None);
    }
    let config = config.build();
    Ok(match &url.host {
        Host::Name(h) if h == "localhost" => {
            let port = url.port_or_default();
            let addrs: Vec<SocketAddr> = ("localhost", port)
                .to_socket_addrs()
                .map(|a| a.filter(|s| s.ip().is_loopback()).collect())
                .unwrap_or_default();
            if addrs.is_empty() {
                return Err(Error::server(
                    "'localhost' does not resolve to a loopback address",
                ));
            }
            Agent::with_parts(
                config,
                DefaultConnector::new(),
                LoopbackResolver(addrs),
            )
        }
        _ => Agent::with_parts(
            config,
            DefaultConnector::new(),
            DefaultResolver::default(),
        ),
    })
}

/// Maps a ureq error to ours, naming the target and the deadline.
pub(crate) fn error(
    e: ureq::Error,
    target: &str,
    deadline: &Deadline,
) -> Error {
    match e {
        ureq::Error::Timeout(_) => deadline.error(),
        ureq::Error::BodyExceedsLimit(n) => Error::server(format!(
            "{target}: the response is larger than {n} bytes"
        )),
        ureq::Error::Io(io) => {
            Error::server(format!("cannot reach {target}: {io}"))
        }
        ureq::Error::HostNotFound => {
            Error::server(format!("cannot resolve the host of {target}"))
        }
        other => Error::server(format!("{target}: {other}")),
    }
}

/// A small, fully read HTTP answer (OAuth metadata, token responses).
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) media_type: String,
    pub(crate) location: Option<String>,
    pub(crate) www_authenticate: Option<String>,
    /// A `DPoP-Nonce` (RFC 9449 §8), when it is visible ASCII.
    pub(crate) dpop_nonce: Option<String>,
    pub(crate) body: Vec<u8>,
}

/// The largest answer [`request`] reads.
pub(crate) const MAX_ANSWER: u64 = 1 << 20;

/// One request, its body read up to [`MAX_ANSWER`]. `form` sends an
/// `application/x-www-form-urlencoded` body; `json` a JSON one.
pub(crate) fn request(
    method: &str,
    url: &Url,
    headers: &[(&str, String)],
    body: Option<(&str, Vec<u8>)>,
    deadline: &Deadline,
) -> Result<Answer> {
    let agent = agent_for(url)?;
    let target = url.to_string();
    let left = deadline.remaining()?;
    let resp = match method {
        "GET" => {
            let mut r = agent.get(&target);
            for (k, v) in headers {
                r = r.header(*k, v.as_str());
            }
            r.config().timeout_global(Some(left)).build().call()
        }
        _ => {
            let mut r = agent.post(&target);
            for (k, v) in headers {
                r = r.header(*k, v.as_str());
            }
            let (ct, bytes) = body.unwrap_or(("application/json", vec![]));
            r.header("content-type", ct)
                .config()
                .timeout_global(Some(left))
                .build()
                .send(&bytes[..])
        }
    };
    let mut resp = resp.map_err(|e| error(e, &target, deadline))?;
    let header = |n: &str| {
        resp.headers().get(n).and_then(|v| v.to_str().ok()).map(str::to_string)
    };
    let media_type = header("content-type")
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let location = header("location");
    let www_authenticate = header("www-authenticate");
    let dpop_nonce = header("dpop-nonce");
    let status = resp.status().as_u16();
    let body = resp
        .body_mut()
        .with_config()
        .limit(MAX_ANSWER)
        .read_to_vec()
        .map_err(|e| error(e, &target, deadline))?;
    Ok(Answer {
        status,
        media_type,
        location,
        www_authenticate,
        dpop_nonce,
        body,
    })
}

impl Answer {
    /// The refusal of a redirect, naming the status and the target.
    pub(crate) fn redirect_error(&self, what: &str) -> Option<Error> {
        (300..400).contains(&self.status).then(|| {
            Error::server(format!(
                "{what}: HTTP {} redirect to '{}' refused: rivumi-mcp never \
                 follows redirects",
                self.status,
                crate::term::clip(
                    &crate::term::line(self.location.as_deref().unwrap_or("")),
                    200
                )
            ))
        })
    }

    /// The body as a JSON object, or why it is not one.
    pub(crate) fn json_object(
        &self,
        what: &str,
    ) -> Result<serde_json::Map<String, serde_json::Value>> {
        if self.media_type != "application/json" {
            return Err(Error::server(format!(
                "{what}: expected application/json, got '{}' (HTTP {}){}",
                crate::term::line(&self.media_type),
                self.status,
                self.snippet()
            )));
        }
        match serde_json::from_slice(&self.body) {
            Ok(serde_json::Value::Object(m)) => Ok(m),
            _ => Err(Error::server(format!(
                "{what}: the answer is not a JSON object"
            ))),
        }
    }

    /// A short, sanitised piece of the body for error messages.
    pub(crate) fn snippet(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let text = text.trim();
        if text.is_empty() {
            String::new()
        } else {
            format!(": {}", crate::term::clip(&crate::term::line(text), 200))
        }
    }
}
