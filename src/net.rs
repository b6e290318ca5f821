//! HTTP clients with rivumi-mcp's rules, for the transport and for OAuth.
//!
//! Every agent: never follows redirects (a 3xx comes back as a response so
//! the caller can refuse it by name), returns 4xx/5xx as values (a 401's
//! `WWW-Authenticate` must be readable), connects within 10 s, sends our
//! user agent. For a loopback URL no proxy is ever used, and `localhost` is
//! resolved here to its loopback addresses only, so a plain-http URL can
//! never reach anything but this machine.
//!
//! URLs a remote server's discovery names (its `resource_metadata`, its
//! authorization servers and their endpoints) may not point inside: a
//! [`Reach`] refuses one whose host is, or resolves to, a loopback,
//! private, link-local or unique-local address ([`is_inside`]) unless the
//! configured server is itself on one (or on the same origin). An origin
//! so checked is remembered for the rest of the command, and every later
//! connection to it resolves through a resolver that refuses such
//! addresses, so a DNS answer that changes after the check (rebinding)
//! is refused too.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Mutex;
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

/// Resolves as ureq does, then refuses an answer for `host` that holds an
/// address inside ([`is_inside`]): the connection-time half of [`Reach`].
/// Another host (a CONNECT proxy's, which may well be inside) resolves as
/// usual.
#[derive(Debug)]
struct OutsideResolver {
    inner: DefaultResolver,
    host: String,
}

impl Resolver for OutsideResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> std::result::Result<ResolvedSocketAddrs, ureq::Error> {
        let addrs = self.inner.resolve(uri, config, timeout)?;
        let target = uri.host().is_some_and(|h| {
            h.trim_start_matches('[').trim_end_matches(']')
                == self.host.trim_start_matches('[').trim_end_matches(']')
        });
        if !target {
            return Ok(addrs);
        }
        if let Some(a) = addrs.iter().find(|a| is_inside(a.ip())) {
            return Err(ureq::Error::Io(std::io::Error::other(format!(
                "it resolves to {}, an address inside; a URL discovered \
                 from a remote server may not point there",
                a.ip()
            ))));
        }
        Ok(addrs)
    }
}

/// Whether `ip` is inside a network rather than on the internet:
/// loopback, private (RFC 1918), shared (RFC 6598), link-local,
/// unspecified ("this network") or, for IPv6, unique-local (fc00::/7) or
/// site-local (fec0::/10); an IPv4-mapped or -compatible IPv6 address by
/// its IPv4 address.
pub(crate) fn is_inside(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4() {
                // ::ffff:a.b.c.d, and the deprecated ::a.b.c.d (with :: and
                // ::1 themselves, which are inside anyway).
                return is_inside(IpAddr::V4(v4)) || v6.is_loopback();
            }
            let first = v6.segments()[0];
            v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || (first & 0xffc0) == 0xfec0
        }
    }
}

/// The addresses of `url`'s host (a literal is its own), or why not.
fn addresses(url: &Url) -> std::result::Result<Vec<IpAddr>, String> {
    match &url.host {
        Host::V4(a) => Ok(vec![IpAddr::V4(*a)]),
        Host::V6(a) => Ok(vec![IpAddr::V6(*a)]),
        Host::Name(n) => (n.as_str(), url.port_or_default())
            .to_socket_addrs()
            .map(|a| a.map(|s| s.ip()).collect())
            .map_err(|e| e.to_string()),
    }
}

/// Test-only: treat every configured server as outside, so that the
/// tests, which run on loopback only, can see a refusal. It only ever
/// makes the rule stricter.
pub(crate) const TEST_SERVER_OUTSIDE: &str = "RIVUMI_MCP_TEST_SERVER_OUTSIDE";

/// Origins a [`Reach`] checked: connections to them resolve through
/// [`OutsideResolver`] for the rest of the command.
static OUTSIDE_ONLY: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn outside_only(url: &Url) -> bool {
    let origin = url.origin();
    OUTSIDE_ONLY.lock().map(|o| o.contains(&origin)).unwrap_or(true)
}

/// Where URLs discovered from a configured server may point.
#[derive(Debug, Clone)]
pub(crate) struct Reach {
    /// The configured server is inside itself: its discoveries may be too.
    anywhere: bool,
    /// The configured server's origin: never refused.
    home: String,
}

/// The pure decision: may a discovered URL whose host has `addrs` be
/// used, when the configured server is (or is not) inside itself and the
/// URL is (or is not) on its origin? Refused when any address is inside
/// (a name with one inside address among public ones included).
pub(crate) fn may_reach(
    server_inside: bool,
    same_origin: bool,
    addrs: &[IpAddr],
) -> bool {
    server_inside || same_origin || !addrs.iter().any(|a| is_inside(*a))
}

impl Reach {
    /// No restriction: for URLs the operator configured.
    pub(crate) fn anywhere() -> Reach {
        Reach { anywhere: true, home: String::new() }
    }

    /// The rule for what `server` (a configured URL) discovers: anywhere
    /// when it is itself inside (by name, or by any address its name
    /// resolves to), else outside only.
    pub(crate) fn of(
        server: &Url,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Reach {
        let forced = lookup(TEST_SERVER_OUTSIDE).is_some_and(|v| v == "1");
        let inside = !forced
            && (server.is_loopback()
                || addresses(server)
                    .is_ok_and(|a| a.iter().any(|ip| is_inside(*ip))));
        Reach { anywhere: inside, home: server.origin() }
    }

    /// Refuses `url` (named by `what`, from discovery) when it points
    /// inside and may not; an accepted URL's origin is then held to it
    /// at every later connection.
    pub(crate) fn check(&self, url: &Url, what: &str) -> Result<()> {
        if self.anywhere || url.origin() == self.home {
            return Ok(());
        }
        let addrs = addresses(url).map_err(|e| {
            Error::refused(format!(
                "{what} {url}: cannot resolve its host to check where it \
                 points: {e}"
            ))
        })?;
        if !may_reach(false, false, &addrs) {
            let inside = addrs.iter().find(|a| is_inside(**a));
            return Err(Error::refused(format!(
                "{what} {url} points inside ({}: loopback, private, \
                 link-local or unique-local), and the configured server \
                 {} is not; refusing it (a remote server may not make \
                 rivumi-mcp call services inside this network)",
                inside.map(ToString::to_string).unwrap_or_default(),
                self.home
            )));
        }
        if let Ok(mut o) = OUTSIDE_ONLY.lock() {
            let origin = url.origin();
            if !o.contains(&origin) {
                o.push(origin);
            }
        }
        Ok(())
    }
}

/// How long an idle pooled connection may be reused: under the 5 s
/// keep-alive timeout of common servers (Node, uvicorn, Apache).
const IDLE_REUSE: Duration = Duration::from_secs(3);

/// The proxy this process's environment routes requests to `url`
/// through, as ureq reads it (`ALL_PROXY`, `HTTPS_PROXY`, `HTTP_PROXY`,
/// their lowercase forms, less what `NO_PROXY` exempts): `None` for a
/// loopback URL, for none set, and for a SOCKS proxy (this build does
/// not speak SOCKS and goes direct, as it does with one from the
/// environment). An MCP server's transport is given it explicitly
/// ([`agent_via`]), so a warm server's connection, made by the daemon,
/// goes the way the invocation's would.
pub(crate) fn env_proxy_for(url: &Url) -> Option<String> {
    if url.is_loopback() {
        return None;
    }
    let p = ureq::Proxy::try_from_env()?;
    let uri: ureq::http::Uri = url.to_string().parse().ok()?;
    let socks = !matches!(
        p.protocol(),
        ureq::ProxyProtocol::Http | ureq::ProxyProtocol::Https
    );
    if socks || p.is_no_proxy(&uri) {
        return None;
    }
    Some(p.uri().to_string())
}

/// An agent for requests to `url`'s origin, through the environment's
/// proxy (OAuth's requests).
pub(crate) fn agent_for(url: &Url) -> Result<Agent> {
    agent_with(url, None)
}

/// An agent for requests to `url`'s origin through exactly `proxy` (a
/// URL [`env_proxy_for`] gave), or directly.
pub(crate) fn agent_via(url: &Url, proxy: Option<&str>) -> Result<Agent> {
    let p = match proxy {
        Some(p) => Some(ureq::Proxy::new(p).map_err(|e| {
            Error::refused(format!("the proxy for {url}: {e}"))
        })?),
        None => None,
    };
    agent_with(url, Some(p))
}

/// An agent for `url`'s origin; `proxy`: `None` for the environment's,
/// else exactly the one given (or none).
fn agent_with(url: &Url, proxy: Option<Option<ureq::Proxy>>) -> Result<Agent> {
    let mut config = Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(10)))
        .user_agent(format!("rivumi-mcp/{}", env!("CARGO_PKG_VERSION")))
        .max_response_header_size(64 * 1024)
        // A pooled connection is not reused after IDLE_REUSE: Node and
        // uvicorn close idle keep-alive connections after 5 s, and a
        // request written onto one as it closes is reset with nothing
        // read (fastmcp's 5 s task poll interval hit exactly that).
        .max_idle_age(IDLE_REUSE);
    if url.is_loopback() {
        // Loopback traffic never goes through a proxy.
        config = config.proxy(None);
    } else if let Some(p) = proxy {
        config = config.proxy(p);
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
        _ if outside_only(url) => Agent::with_parts(
            config,
            DefaultConnector::new(),
            OutsideResolver {
                inner: DefaultResolver::default(),
                host: url.host_str(),
            },
        ),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn inside_addresses() {
        for a in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "::ffff:10.0.0.1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
        ] {
            assert!(is_inside(ip(a)), "{a}");
        }
        for a in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "172.15.255.255",
            "192.169.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.255.0.1",
            "2001:4860:4860::8888",
            "2606:4700::1111",
            "fbff::1",
            "ff02::1",
            "::ffff:8.8.8.8",
        ] {
            assert!(!is_inside(ip(a)), "{a}");
        }
    }

    /// A checked origin whose name comes to resolve inside (rebinding)
    /// is refused where the connection is made, and nothing connects.
    #[test]
    fn a_checked_origin_is_refused_at_connection_time() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let url = Url::parse(&format!("http://127.0.0.1:{port}/x")).unwrap();
        let d = crate::deadline::Deadline::new("t", Duration::from_secs(5));
        // As if a check had passed for it (when it resolved outside).
        OUTSIDE_ONLY.lock().unwrap().push(url.origin());
        let e = request("GET", &url, &[], None, &d).unwrap_err();
        assert!(e.to_string().contains("an address inside"), "{e}");
        assert!(l.accept().is_err(), "nothing may connect");
    }

    #[test]
    fn the_decision() {
        let public = [ip("93.184.216.34")];
        let private = [ip("10.0.0.5")];
        let mixed = [ip("93.184.216.34"), ip("127.0.0.1")];
        assert!(may_reach(false, false, &public));
        assert!(!may_reach(false, false, &private));
        assert!(!may_reach(false, false, &mixed));
        // A server that is itself inside may point inside.
        assert!(may_reach(true, false, &private));
        // Its own origin is never refused.
        assert!(may_reach(false, true, &private));
    }

    #[test]
    fn reach_of_a_server() {
        let none = |_: &str| None;
        let forced = |k: &str| (k == TEST_SERVER_OUTSIDE).then(|| "1".into());
        let local = Url::parse("http://127.0.0.1:9/mcp").unwrap();
        let there = Url::parse("https://10.0.0.7/x").unwrap();
        let meta = Url::parse("https://169.254.169.254/latest").unwrap();
        let home = Url::parse("http://127.0.0.1:9/.well-known/x").unwrap();
        // On loopback: its discoveries may point inside.
        assert!(Reach::of(&local, &none).check(&there, "x").is_ok());
        // Treated as outside: they may not, except on its own origin.
        let r = Reach::of(&local, &forced);
        let e = r.check(&there, "the resource_metadata URL").unwrap_err();
        assert!(e.to_string().contains("points inside (10.0.0.7"), "{e}");
        assert!(r.check(&meta, "x").is_err());
        assert!(r.check(&home, "x").is_ok());
        // An outside server by literal address.
        let public = Url::parse("https://93.184.216.34/mcp").unwrap();
        assert!(Reach::of(&public, &none).check(&meta, "x").is_err());
        assert!(Reach::anywhere().check(&meta, "x").is_ok());
    }
}
