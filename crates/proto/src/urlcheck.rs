//! Strict validation of MCP server and OAuth endpoint URLs, and their one
//! canonical form.
//!
//! Whatever this module accepts is exactly what the HTTP connector will
//! use, and lenient URL handling there is a security problem: ureq would
//! silently send `user:pass@` as Basic auth, drop a `#fragment`, turn port
//! 99999 into port 80, and resolve `127.1` or `0x7f000001` to 127.0.0.1. So
//! the raw string is checked here, strictly, against a small grammar
//! (http/https, a DNS name or plain IP literal, an optional port, a path),
//! and everything else is refused with a specific message. Plain http is
//! allowed only to loopback addresses. Error messages never quote the URL,
//! so that a credential in it cannot leak into logs.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Longest DNS name accepted (RFC 1035, without the trailing dot).
const MAX_NAME_LEN: usize = 253;

/// Longest DNS label accepted (RFC 1035).
const MAX_LABEL_LEN: usize = 63;

/// Longest URL accepted, in characters. The HTTP layer (`http::Uri`)
/// refuses more than 65534 bytes; no MCP endpoint needs more than a
/// fraction of this bound, which leaves that limit far away.
pub const MAX_URL_LEN: usize = 8192;

/// Visible ASCII characters that RFC 3986 does not allow in a path
/// unencoded. The HTTP layer refuses some of them (`<`, `>`, `` ` ``) and
/// takes others only for leniency's sake, so all are refused here, with a
/// percent-encoding to use instead: what this module accepts, the
/// connector can send. (`\`, `?` and `#` have their own errors.)
const NOT_IN_PATH: &str = "\"<>[]^`{|}";

/// The two schemes an MCP HTTP transport or an OAuth endpoint may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `http`, allowed on loopback only.
    Http,
    /// `https`.
    Https,
}

impl Scheme {
    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// The host, already classified, so that loopback checks and connection
/// code never re-interpret a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A DNS name, lowercased.
    Name(String),
    /// An IPv4 address.
    V4(Ipv4Addr),
    /// An IPv6 address (written in brackets).
    V6(Ipv6Addr),
}

/// A validated URL in canonical form; `Display` gives the exact string the
/// connector should use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// The host, classified.
    pub host: Host,
    /// The explicit port; None when absent or equal to the scheme's
    /// default, so that equal URLs compare equal.
    pub port: Option<u16>,
    /// Starts with '/'; "/" when the URL had no path.
    pub path: String,
}

/// Why a URL was refused. Variants carry only positions, single
/// characters and parts known not to hold secrets, never the URL itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlError {
    /// The URL is empty.
    Empty,
    /// ASCII whitespace at this 1-based character position.
    Whitespace {
        /// The position, from 1.
        at: usize,
        /// The character.
        ch: char,
    },
    /// An ASCII control character at this 1-based character position.
    Control {
        /// The position, from 1.
        at: usize,
        /// The character.
        ch: char,
    },
    /// A non-ASCII character at this 1-based character position.
    NonAscii {
        /// The position, from 1.
        at: usize,
        /// The character.
        ch: char,
    },
    /// A backslash at this 1-based character position.
    Backslash {
        /// The position, from 1.
        at: usize,
    },
    /// More than [`MAX_URL_LEN`] characters.
    TooLong,
    /// A character not allowed unencoded in a path, at this 1-based
    /// character position of the whole URL.
    PathChar {
        /// The position, from 1.
        at: usize,
        /// The character.
        ch: char,
    },
    /// Not `scheme://...`.
    NotAbsolute,
    /// The scheme, lowercased; None when it is not shown because the URL
    /// may carry credentials.
    UnsupportedScheme(Option<String>),
    /// User-info (`user@`) before the host.
    Credentials,
    /// A query (`?...`).
    Query,
    /// A fragment (`#...`).
    Fragment,
    /// No host after `//`.
    EmptyHost,
    /// `[` without its `]`.
    UnclosedIpv6,
    /// An IPv6 literal that does not parse.
    InvalidIpv6,
    /// An IPv6 zone identifier (`%`).
    Ipv6Zone,
    /// An IPv6 address without brackets.
    UnbracketedIpv6,
    /// Something other than `:port` after `]`.
    AfterIpv6,
    /// A character not allowed in a host name.
    InvalidHostChar(char),
    /// A numeric host that is not a plain dotted IPv4 address.
    AmbiguousNumericHost,
    /// An empty label (`a..b`).
    EmptyLabel,
    /// A label longer than 63 characters.
    LabelTooLong,
    /// A host name longer than 253 characters.
    NameTooLong,
    /// The unspecified address (`0.0.0.0`, `[::]`).
    Unspecified,
    /// A `:` without a port.
    EmptyPort,
    /// A port that is not a decimal number.
    InvalidPort,
    /// A port above 65535.
    PortOutOfRange(u32),
    /// A `%` not followed by two hex digits.
    BadPercent,
    /// A `.` or `..` path segment.
    DotSegment,
    /// `http` to a host that is not loopback.
    PlainHttp,
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlError::Empty => f.write_str("URL is empty"),
            UrlError::Whitespace { at, ch } => write!(
                f,
                "URL contains whitespace (U+{:04X}) at character {at}",
                u32::from(*ch)
            ),
            UrlError::Control { at, ch } => write!(
                f,
                "URL contains a control character (U+{:04X}) \
                 at character {at}",
                u32::from(*ch)
            ),
            UrlError::NonAscii { at, ch } => write!(
                f,
                "URL contains a non-ASCII character (U+{:04X}) at character \
                 {at}; percent-encode it, or use the punycode host name",
                u32::from(*ch)
            ),
            UrlError::Backslash { at } => {
                write!(f, "URL contains a backslash at character {at}")
            }
            UrlError::TooLong => {
                write!(f, "URL is longer than {MAX_URL_LEN} characters")
            }
            UrlError::PathChar { at, ch } => write!(
                f,
                "URL path contains '{ch}' at character {at}, which HTTP does \
                 not allow unencoded; write it as %{:02X}",
                u32::from(*ch)
            ),
            UrlError::NotAbsolute => f.write_str(
                "not an absolute URL (it must start with http:// or https://)",
            ),
            UrlError::UnsupportedScheme(Some(scheme)) => write!(
                f,
                "unsupported scheme '{scheme}' \
                 (only http and https are allowed)"
            ),
            UrlError::UnsupportedScheme(None) => f.write_str(
                "unsupported scheme (only http and https are allowed)",
            ),
            UrlError::Credentials => f.write_str(
                "URL must not contain credentials (user-info before '@')",
            ),
            UrlError::Query => f.write_str("URL must not have a query"),
            UrlError::Fragment => f.write_str("URL must not have a fragment"),
            UrlError::EmptyHost => f.write_str("URL has an empty host"),
            UrlError::UnclosedIpv6 => {
                f.write_str("IPv6 address literal is missing its closing ']'")
            }
            UrlError::InvalidIpv6 => {
                f.write_str("invalid IPv6 address literal")
            }
            UrlError::Ipv6Zone => f.write_str(
                "IPv6 zone identifiers ('%') are not allowed in the host",
            ),
            UrlError::UnbracketedIpv6 => f.write_str(
                "IPv6 address must be enclosed in brackets, as in [::1]",
            ),
            UrlError::AfterIpv6 => f.write_str(
                "unexpected characters after the IPv6 address literal \
                 (only ':port' may follow ']')",
            ),
            UrlError::InvalidHostChar(ch) => write!(
                f,
                "invalid character '{ch}' in host (allowed: letters, digits, \
                 '-', '_' and '.')"
            ),
            UrlError::AmbiguousNumericHost => f.write_str(
                "ambiguous numeric host (an IPv4 address must be four decimal \
                 numbers 0-255 without leading zeros, as in 127.0.0.1)",
            ),
            UrlError::EmptyLabel => f.write_str(
                "host name has an empty label \
                 (leading, trailing or double dot)",
            ),
            UrlError::LabelTooLong => {
                f.write_str("host name label is longer than 63 characters")
            }
            UrlError::NameTooLong => {
                f.write_str("host name is longer than 253 characters")
            }
            UrlError::Unspecified => f.write_str(
                "unspecified address (0.0.0.0 or [::]) cannot be connected to",
            ),
            UrlError::EmptyPort => {
                f.write_str("URL has an empty port after ':'")
            }
            UrlError::InvalidPort => {
                f.write_str("port must be 1 to 5 decimal digits")
            }
            UrlError::PortOutOfRange(port) => {
                write!(f, "port {port} is out of range (1-65535)")
            }
            UrlError::BadPercent => f.write_str(
                "invalid percent-encoding in path \
                 ('%' must be followed by two hex digits)",
            ),
            UrlError::DotSegment => f.write_str(
                "dot segments in path ('.' or '..') are not allowed",
            ),
            UrlError::PlainHttp => f.write_str(
                "plain http is only allowed to a loopback address \
                 (127.0.0.0/8, [::1], localhost); use https",
            ),
        }
    }
}

impl std::error::Error for UrlError {}

impl Url {
    /// Validates `raw` against every rule of this module and returns its
    /// canonical form.
    pub fn parse(raw: &str) -> Result<Url, UrlError> {
        check_chars(raw)?;
        let (scheme, rest) = split_scheme(raw)?;
        let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, path) =
            rest.split_at_checked(authority_len).unwrap_or((rest, ""));
        if authority.contains('@') {
            return Err(UrlError::Credentials);
        }
        if raw.contains('?') {
            return Err(UrlError::Query);
        }
        if raw.contains('#') {
            return Err(UrlError::Fragment);
        }
        let (host, port) = parse_authority(authority)?;
        let port = port.filter(|&p| p != scheme.default_port());
        let path_start = raw.len().saturating_sub(path.len());
        let path = check_path(path, path_start)?;
        let url = Url { scheme, host, port, path };
        if scheme == Scheme::Http && !url.is_loopback() {
            return Err(UrlError::PlainHttp);
        }
        Ok(url)
    }

    /// Whether the host is on this machine by definition: exactly
    /// `localhost`, 127.0.0.0/8 or ::1. This is what makes plain http safe.
    pub fn is_loopback(&self) -> bool {
        match &self.host {
            Host::Name(name) => name == "localhost",
            Host::V4(addr) => addr.is_loopback(),
            Host::V6(addr) => *addr == Ipv6Addr::LOCALHOST,
        }
    }

    /// The port to connect to.
    pub fn port_or_default(&self) -> u16 {
        self.port.unwrap_or(self.scheme.default_port())
    }

    /// The host as written in a URL: names and IPv4 as is, IPv6 in
    /// brackets.
    pub fn host_str(&self) -> String {
        match &self.host {
            Host::Name(name) => name.clone(),
            Host::V4(addr) => addr.to_string(),
            Host::V6(addr) => format!("[{addr}]"),
        }
    }

    /// The host plus ":port" when the port is not the scheme's default, as
    /// used in a Host header.
    pub fn authority(&self) -> String {
        match self.port {
            Some(port) => format!("{}:{port}", self.host_str()),
            None => self.host_str(),
        }
    }

    /// The origin (`https://example.com:8443`), for OAuth metadata checks
    /// and for comparing where two URLs point.
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme.as_str(), self.authority())
    }

    /// The same origin with another path, for building well-known
    /// discovery URLs. The path is a trusted constant from our own code;
    /// a missing leading '/' is added.
    pub fn with_path(&self, path: &str) -> Url {
        let path = if path.starts_with('/') {
            path.to_owned()
        } else {
            format!("/{path}")
        };
        Url { path, ..self.clone() }
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.origin(), self.path)
    }
}

/// Refuses characters that have no place in a URL we accept; after this,
/// the string is visible ASCII, so byte offsets are character offsets.
fn check_chars(raw: &str) -> Result<(), UrlError> {
    if raw.is_empty() {
        return Err(UrlError::Empty);
    }
    for (i, ch) in raw.chars().enumerate() {
        let at = i.saturating_add(1);
        if !ch.is_ascii() {
            return Err(UrlError::NonAscii { at, ch });
        }
        if ch.is_ascii_whitespace() {
            return Err(UrlError::Whitespace { at, ch });
        }
        if ch.is_ascii_control() {
            return Err(UrlError::Control { at, ch });
        }
        if ch == '\\' {
            return Err(UrlError::Backslash { at });
        }
    }
    // All visible ASCII now: the byte length is the character count.
    if raw.len() > MAX_URL_LEN {
        return Err(UrlError::TooLong);
    }
    Ok(())
}

/// Splits off "http://" or "https://" (any case), returning the scheme
/// and the text after the "//".
fn split_scheme(raw: &str) -> Result<(Scheme, &str), UrlError> {
    let Some((name, after)) = raw.split_once(':') else {
        return Err(UrlError::NotAbsolute);
    };
    // RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
    let is_scheme = name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')
        });
    if !is_scheme {
        return Err(UrlError::NotAbsolute);
    }
    let scheme = if name.eq_ignore_ascii_case("http") {
        Scheme::Http
    } else if name.eq_ignore_ascii_case("https") {
        Scheme::Https
    } else if after.starts_with(|c: char| c.is_ascii_digit()) {
        // "localhost:3000/mcp" is a host and port, not a scheme.
        return Err(UrlError::NotAbsolute);
    } else if raw.contains('@') {
        // "user:secret@host" parses as a scheme; do not echo the user.
        return Err(UrlError::UnsupportedScheme(None));
    } else {
        return Err(UrlError::UnsupportedScheme(Some(
            name.to_ascii_lowercase(),
        )));
    };
    match after.strip_prefix("//") {
        Some(rest) => Ok((scheme, rest)),
        None => Err(UrlError::NotAbsolute),
    }
}

/// Parses `host`, `host:port`, `[v6]` or `[v6]:port`.
fn parse_authority(authority: &str) -> Result<(Host, Option<u16>), UrlError> {
    if authority.is_empty() {
        return Err(UrlError::EmptyHost);
    }
    if let Some(inside) = authority.strip_prefix('[') {
        let Some((literal, after)) = inside.split_once(']') else {
            return Err(UrlError::UnclosedIpv6);
        };
        if literal.contains('%') {
            return Err(UrlError::Ipv6Zone);
        }
        let addr: Ipv6Addr =
            literal.parse().map_err(|_| UrlError::InvalidIpv6)?;
        if addr.is_unspecified()
            || addr.to_ipv4_mapped() == Some(Ipv4Addr::UNSPECIFIED)
        {
            return Err(UrlError::Unspecified);
        }
        let port = match after {
            "" => None,
            _ => match after.strip_prefix(':') {
                Some(port) => Some(parse_port(port)?),
                None => return Err(UrlError::AfterIpv6),
            },
        };
        return Ok((Host::V6(addr), port));
    }
    if authority.matches(':').count() > 1 {
        let unzoned = authority.split('%').next().unwrap_or(authority);
        if unzoned.parse::<Ipv6Addr>().is_ok() {
            return Err(UrlError::UnbracketedIpv6);
        }
    }
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(parse_port(port)?)),
        None => (authority, None),
    };
    Ok((parse_host(host)?, port))
}

/// Classifies a bracket-less host: a strict dotted-quad IPv4 address when
/// it looks numeric at all, else a DNS name.
fn parse_host(host: &str) -> Result<Host, UrlError> {
    if host.is_empty() {
        return Err(UrlError::EmptyHost);
    }
    if let Some(ch) = host.chars().find(|&c| {
        !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    }) {
        return Err(UrlError::InvalidHostChar(ch));
    }
    // Resolvers read "127.1", "0x7f000001", "2130706433", "0177.0.0.1" or
    // "127.0.0.1." as IPv4 addresses, so a host whose last label looks like
    // a number is one and must be written the one unambiguous way.
    let last = host.split('.').rfind(|label| !label.is_empty()).unwrap_or("");
    let looks_numeric = last.bytes().all(|b| b.is_ascii_digit())
        || last.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("0x"));
    if looks_numeric {
        let addr = strict_ipv4(host).ok_or(UrlError::AmbiguousNumericHost)?;
        if addr.is_unspecified() {
            return Err(UrlError::Unspecified);
        }
        return Ok(Host::V4(addr));
    }
    if host.len() > MAX_NAME_LEN {
        return Err(UrlError::NameTooLong);
    }
    for label in host.split('.') {
        if label.is_empty() {
            return Err(UrlError::EmptyLabel);
        }
        if label.len() > MAX_LABEL_LEN {
            return Err(UrlError::LabelTooLong);
        }
    }
    Ok(Host::Name(host.to_ascii_lowercase()))
}

/// Exactly four decimal octets 0-255, each without leading zeros.
fn strict_ipv4(host: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut labels = host.split('.');
    for octet in &mut octets {
        let label = labels.next()?;
        let valid = !label.is_empty()
            && label.len() <= 3
            && label.bytes().all(|b| b.is_ascii_digit())
            && (label == "0" || !label.starts_with('0'));
        if !valid {
            return None;
        }
        *octet = label.parse().ok()?;
    }
    if labels.next().is_some() {
        return None;
    }
    Some(Ipv4Addr::from(octets))
}

/// 1 to 5 ASCII digits with a value of 1-65535.
fn parse_port(port: &str) -> Result<u16, UrlError> {
    if port.is_empty() {
        return Err(UrlError::EmptyPort);
    }
    if port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(UrlError::InvalidPort);
    }
    let value: u32 = port.parse().map_err(|_| UrlError::InvalidPort)?;
    match u16::try_from(value) {
        Ok(p) if p != 0 => Ok(p),
        _ => Err(UrlError::PortOutOfRange(value)),
    }
}

/// Checks the path (empty or starting with '/') and returns it as kept:
/// visible ASCII, well-formed percent-escapes, no dot segments (also
/// percent-encoded ones, which some servers decode before resolving).
/// `start` is the path's byte offset in the URL, for positions in errors.
fn check_path(path: &str, start: usize) -> Result<String, UrlError> {
    if path.is_empty() {
        return Ok("/".to_owned());
    }
    let bytes = path.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if !b.is_ascii_graphic() {
            // check_chars already refused these; kept as a local guarantee.
            let (at, ch) = (i.saturating_add(1), char::from(b));
            return Err(UrlError::Control { at, ch });
        }
        if NOT_IN_PATH.contains(char::from(b)) {
            // ASCII from here on: the byte offset is the character one.
            let at = start.saturating_add(i).saturating_add(1);
            return Err(UrlError::PathChar { at, ch: char::from(b) });
        }
        if b == b'%' {
            let hex = |k: usize| {
                bytes
                    .get(i.saturating_add(k))
                    .is_some_and(u8::is_ascii_hexdigit)
            };
            if !(hex(1) && hex(2)) {
                return Err(UrlError::BadPercent);
            }
        }
    }
    let is_dot = |seg: &str| {
        let seg = seg.to_ascii_lowercase().replace("%2e", ".");
        seg == "." || seg == ".."
    };
    if path.split('/').skip(1).any(is_dot) {
        return Err(UrlError::DotSegment);
    }
    Ok(path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// URLs that must be accepted, with their canonical form.
    const ACCEPTED: &[(&str, &str)] = &[
        ("https://example.com", "https://example.com/"),
        ("https://example.com/", "https://example.com/"),
        ("http://localhost:3000/mcp", "http://localhost:3000/mcp"),
        ("http://LocalHost/mcp", "http://localhost/mcp"),
        ("http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp"),
        ("http://127.5.6.7/", "http://127.5.6.7/"),
        ("http://127.255.255.255", "http://127.255.255.255/"),
        ("http://[::1]:9/x", "http://[::1]:9/x"),
        ("http://[0:0:0:0:0:0:0:1]/", "http://[::1]/"),
        ("HTTPS://EXAMPLE.com:443/A", "https://example.com/A"),
        ("Http://localhost:80/", "http://localhost/"),
        ("https://example.com:80/", "https://example.com:80/"),
        ("http://localhost:443/", "http://localhost:443/"),
        ("https://example.com:8443/mcp/", "https://example.com:8443/mcp/"),
        ("https://example.com:00443/", "https://example.com/"),
        ("https://example.com:65535/", "https://example.com:65535/"),
        ("https://example.com:1/", "https://example.com:1/"),
        ("https://10.0.0.1/mcp", "https://10.0.0.1/mcp"),
        ("https://0.1.2.3/", "https://0.1.2.3/"),
        ("https://255.255.255.255/", "https://255.255.255.255/"),
        ("https://[2001:DB8::1]:8443/", "https://[2001:db8::1]:8443/"),
        ("https://[::ffff:127.0.0.1]/", "https://[::ffff:127.0.0.1]/"),
        ("https://my_host.example-1.com/", "https://my_host.example-1.com/"),
        ("https://1.2.3.4.example/", "https://1.2.3.4.example/"),
        ("https://xn--bcher-kva.example/", "https://xn--bcher-kva.example/"),
        ("https://example.com/a%2Fb%20c", "https://example.com/a%2Fb%20c"),
        (
            "https://example.com/.well-known/x",
            "https://example.com/.well-known/x",
        ),
        ("https://example.com/a/.../b", "https://example.com/a/.../b"),
        ("https://example.com//x", "https://example.com//x"),
        (
            "https://example.com/p@th:x;y=z!$&'()*+,",
            "https://example.com/p@th:x;y=z!$&'()*+,",
        ),
        ("https://localhost/", "https://localhost/"),
    ];

    /// URLs that must be refused, with the error.
    fn refused() -> Vec<(&'static str, UrlError)> {
        use UrlError::*;
        vec![
            ("", Empty),
            ("http://example.com/mcp", PlainHttp),
            ("http://localhost.example.com/", PlainHttp),
            ("http://foo.localhost/", PlainHttp),
            ("http://10.0.0.1/", PlainHttp),
            ("http://[::ffff:127.0.0.1]/", PlainHttp),
            ("http://localhost./", EmptyLabel),
            ("https://user:pw@example.com/mcp", Credentials),
            ("https://user@example.com/", Credentials),
            ("https://@example.com/", Credentials),
            ("https://example.com/mcp?token=x", Query),
            ("https://example.com?x", Query),
            ("https://example.com/#f", Fragment),
            ("https://example.com#", Fragment),
            ("ftp://x/", UnsupportedScheme(Some("ftp".into()))),
            ("file:///etc/passwd", UnsupportedScheme(Some("file".into()))),
            (
                "javascript:alert(1)",
                UnsupportedScheme(Some("javascript".into())),
            ),
            ("data:text/html,hi", UnsupportedScheme(Some("data".into()))),
            ("ws://localhost/", UnsupportedScheme(Some("ws".into()))),
            ("HTTPX://example.com/", UnsupportedScheme(Some("httpx".into()))),
            ("admin:hunter2@example.com", UnsupportedScheme(None)),
            ("/mcp", NotAbsolute),
            ("//host/x", NotAbsolute),
            ("http:/x", NotAbsolute),
            ("http:host", NotAbsolute),
            ("https:", NotAbsolute),
            ("example.com/mcp", NotAbsolute),
            ("localhost:3000/mcp", NotAbsolute),
            ("3http://x/", NotAbsolute),
            ("http://0.0.0.0:8080", Unspecified),
            ("https://0.0.0.0/", Unspecified),
            ("http://[::]:8080", Unspecified),
            ("https://[::]/", Unspecified),
            ("https://[::ffff:0.0.0.0]/", Unspecified),
            ("http://127.1:8080/", AmbiguousNumericHost),
            ("http://0x7f000001/", AmbiguousNumericHost),
            ("http://0X7F.0.0.1/", AmbiguousNumericHost),
            ("http://2130706433/", AmbiguousNumericHost),
            ("http://0177.0.0.1/", AmbiguousNumericHost),
            ("http://127.0.0.1./", AmbiguousNumericHost),
            ("https://1.2.3/", AmbiguousNumericHost),
            ("https://01.2.3.4/", AmbiguousNumericHost),
            ("https://1.2.3.4.5/", AmbiguousNumericHost),
            ("https://256.1.1.1/", AmbiguousNumericHost),
            ("https://1.2.3.0004/", AmbiguousNumericHost),
            ("https://example.0x1/", AmbiguousNumericHost),
            ("https://example.123/", AmbiguousNumericHost),
            ("https://1..2/", AmbiguousNumericHost),
            ("https://example.com:99999/", PortOutOfRange(99999)),
            ("https://example.com:65536/", PortOutOfRange(65536)),
            ("https://example.com:0/", PortOutOfRange(0)),
            ("https://example.com:00000/", PortOutOfRange(0)),
            ("https://example.com:/", EmptyPort),
            ("https://example.com:", EmptyPort),
            ("https://example.com:+80/", InvalidPort),
            ("https://example.com:8o/", InvalidPort),
            ("https://example.com:-1/", InvalidPort),
            ("https://example.com:123456/", InvalidPort),
            ("https://example.com:80:90/", InvalidPort),
            ("http:///x", EmptyHost),
            ("https://", EmptyHost),
            ("https://:443/", EmptyHost),
            ("https://exa mple.com/", Whitespace { at: 12, ch: ' ' }),
            (" https://example.com/", Whitespace { at: 1, ch: ' ' }),
            ("https://example.com/\n", Whitespace { at: 21, ch: '\n' }),
            ("https://example.com/\t", Whitespace { at: 21, ch: '\t' }),
            ("https://exa\u{7}mple.com/", Control { at: 12, ch: '\u{7}' }),
            ("https://example.com/\u{7F}", Control { at: 21, ch: '\u{7F}' }),
            ("https://example.com/\u{0}", Control { at: 21, ch: '\u{0}' }),
            ("https://bücher.example/", NonAscii { at: 10, ch: 'ü' }),
            ("https://example.com/\u{A0}", NonAscii { at: 21, ch: '\u{A0}' }),
            ("https://example.com\\@evil.com/", Backslash { at: 20 }),
            ("https:\\\\example.com/", Backslash { at: 7 }),
            ("https://[::1%25eth0]/", Ipv6Zone),
            ("https://[fe80::1%eth0]/", Ipv6Zone),
            ("https://::1/", UnbracketedIpv6),
            ("https://fe80::1%eth0/", UnbracketedIpv6),
            ("https://[::1/", UnclosedIpv6),
            ("https://[::g]/", InvalidIpv6),
            ("https://[127.0.0.1]/", InvalidIpv6),
            ("https://[]/", InvalidIpv6),
            ("https://[::1]x/", AfterIpv6),
            ("https://[::1]:/", EmptyPort),
            ("https://[::1]:0/", PortOutOfRange(0)),
            ("https://exa%6dple.com/", InvalidHostChar('%')),
            ("https://example.com%2f/", InvalidHostChar('%')),
            ("https://exa*mple.com/", InvalidHostChar('*')),
            ("https://ex[a]mple.com/", InvalidHostChar('[')),
            ("https://.example.com/", EmptyLabel),
            ("https://example.com./", EmptyLabel),
            ("https://example..com/", EmptyLabel),
            ("https://localhost./", EmptyLabel),
            ("https://example.com/a%2", BadPercent),
            ("https://example.com/a%zz", BadPercent),
            ("https://example.com/%", BadPercent),
            ("https://example.com/a/../b/", DotSegment),
            ("https://example.com/a/./b", DotSegment),
            ("https://example.com/a/..", DotSegment),
            ("https://example.com/a/.", DotSegment),
            ("https://example.com/..", DotSegment),
            ("https://example.com/./", DotSegment),
            ("https://example.com/a/%2e%2E/b", DotSegment),
            ("https://example.com/a/.%2e", DotSegment),
            ("https://example.com/%2E", DotSegment),
            ("https://example.com/a<b", PathChar { at: 22, ch: '<' }),
            ("https://example.com/>", PathChar { at: 21, ch: '>' }),
            ("http://[::1]:9/`x", PathChar { at: 16, ch: '`' }),
            ("https://example.com/{a}", PathChar { at: 21, ch: '{' }),
            ("https://example.com/a|b", PathChar { at: 22, ch: '|' }),
            ("https://example.com/\"", PathChar { at: 21, ch: '"' }),
            ("https://example.com/[x]", PathChar { at: 21, ch: '[' }),
            ("https://example.com/x^", PathChar { at: 22, ch: '^' }),
        ]
    }

    #[test]
    fn accepted_urls_and_canonical_forms() -> TestResult {
        for (raw, canonical) in ACCEPTED {
            let url = Url::parse(raw).map_err(|e| format!("{raw:?}: {e}"))?;
            assert_eq!(url.to_string(), *canonical, "input {raw:?}");
            // The canonical form is a fixed point.
            assert_eq!(Url::parse(canonical)?, url, "input {raw:?}");
        }
        Ok(())
    }

    #[test]
    fn refused_urls() {
        for (raw, want) in refused() {
            assert_eq!(Url::parse(raw), Err(want), "input {raw:?}");
        }
    }

    #[test]
    fn table_is_large_enough() {
        assert!(ACCEPTED.len() + refused().len() >= 40);
    }

    #[test]
    fn messages_never_echo_secrets() {
        let cases = [
            "https://user:pw@example.com/mcp",
            "http://user:pw@example.com/mcp",
            "https://user:pw@[::1]/",
            "https://user:pw@example.com?x#y",
            "pw:pw@example.com",
            "https://user:pw@host with space/",
            "https://user:pw\\@example.com/",
            "https://user:pwü@example.com/",
        ];
        for raw in cases {
            let Err(e) = Url::parse(raw) else { panic!("{raw:?} accepted") };
            let msg = e.to_string();
            assert!(!msg.contains("pw"), "{raw:?} -> {msg:?}");
            assert!(!msg.contains("user:"), "{raw:?} -> {msg:?}");
            assert!(!msg.contains("example"), "{raw:?} -> {msg:?}");
        }
        let e = Url::parse("https://user:pw@example.com/mcp");
        assert_eq!(
            e.map_err(|e| e.to_string()),
            Err("URL must not contain credentials (user-info before '@')"
                .to_owned())
        );
    }

    #[test]
    fn error_messages() {
        let cases = [
            (
                "ftp://x/",
                "unsupported scheme 'ftp' (only http and https are allowed)",
            ),
            (
                "https://exa mple.com/",
                "URL contains whitespace (U+0020) at character 12",
            ),
            (
                "https://example.com:99999/",
                "port 99999 is out of range (1-65535)",
            ),
            (
                "http://0.0.0.0/",
                "unspecified address (0.0.0.0 or [::]) cannot be connected to",
            ),
            ("https://example.com/?a", "URL must not have a query"),
            ("https://example.com/#a", "URL must not have a fragment"),
            (
                "https://example.com/mcp<x>",
                "URL path contains '<' at character 24, which HTTP does not \
                 allow unencoded; write it as %3C",
            ),
            (
                "http://example.com/",
                "plain http is only allowed to a loopback address \
                 (127.0.0.0/8, [::1], localhost); use https",
            ),
        ];
        for (raw, want) in cases {
            let got = Url::parse(raw).map_err(|e| e.to_string());
            assert_eq!(got, Err(want.to_owned()), "input {raw:?}");
        }
    }

    #[test]
    fn loopback() -> TestResult {
        let yes = [
            "http://localhost/",
            "http://127.0.0.1/",
            "http://127.9.9.9/",
            "http://[::1]/",
        ];
        for raw in yes {
            assert!(Url::parse(raw)?.is_loopback(), "{raw}");
        }
        let no = [
            "https://localhost.example.com/",
            "https://foo.localhost/",
            "https://128.0.0.1/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::2]/",
            "https://example.com/",
        ];
        for raw in no {
            assert!(!Url::parse(raw)?.is_loopback(), "{raw}");
        }
        Ok(())
    }

    #[test]
    fn accessors() -> TestResult {
        let url = Url::parse("https://Example.com:8443/mcp")?;
        assert_eq!(url.scheme, Scheme::Https);
        assert_eq!(url.host, Host::Name("example.com".into()));
        assert_eq!(url.port, Some(8443));
        assert_eq!(url.port_or_default(), 8443);
        assert_eq!(url.host_str(), "example.com");
        assert_eq!(url.authority(), "example.com:8443");
        assert_eq!(url.origin(), "https://example.com:8443");
        let wk = url.with_path("/.well-known/oauth-protected-resource/mcp");
        assert_eq!(
            wk.to_string(),
            "https://example.com:8443/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(url.with_path("x").path, "/x");
        assert_eq!(url.with_path("").path, "/");

        let url = Url::parse("http://[::1]/")?;
        assert_eq!(url.host, Host::V6(Ipv6Addr::LOCALHOST));
        assert_eq!(url.port, None);
        assert_eq!(url.port_or_default(), 80);
        assert_eq!(url.host_str(), "[::1]");
        assert_eq!(url.authority(), "[::1]");
        assert_eq!(url.origin(), "http://[::1]");

        let url = Url::parse("https://127.0.0.1:443")?;
        assert_eq!(url.host, Host::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(url.port, None);
        assert_eq!(url.port_or_default(), 443);
        assert_eq!(url.path, "/");
        assert_eq!(url.authority(), "127.0.0.1");
        Ok(())
    }

    #[test]
    fn host_length_limits() -> TestResult {
        let label = "a".repeat(63);
        let url = Url::parse(&format!("https://{label}.com/"))?;
        assert_eq!(url.host_str().len(), 67);
        let long_label = format!("https://{}.com/", "a".repeat(64));
        assert_eq!(Url::parse(&long_label), Err(UrlError::LabelTooLong));
        // 4 labels of 63 plus 3 dots = 255 > 253.
        let long_name = format!("https://{}/", [label.as_str(); 4].join("."));
        assert_eq!(Url::parse(&long_name), Err(UrlError::NameTooLong));
        let max = format!("{}.{}.{}.{}", label, label, label, "a".repeat(61));
        assert_eq!(max.len(), 253);
        Url::parse(&format!("https://{max}/"))?;
        Ok(())
    }

    #[test]
    fn length_limit() -> TestResult {
        let at_limit = format!("https://example.com/{}", "a".repeat(8172));
        assert_eq!(at_limit.len(), MAX_URL_LEN);
        Url::parse(&at_limit)?;
        let over = format!("{at_limit}a");
        assert_eq!(Url::parse(&over), Err(UrlError::TooLong));
        Ok(())
    }

    /// A small deterministic generator (xorshift), so the cross-check
    /// below needs no extra crate and every failure can be replayed.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
            let n = u64::try_from(from.len()).unwrap_or(1);
            let i = usize::try_from(self.next() % n).unwrap_or(0);
            from.get(i).copied().unwrap_or("")
        }
    }

    /// One URL-ish string: mostly well-formed pieces, with every visible
    /// ASCII character and a few others mixed into the path.
    fn generate(g: &mut Gen) -> String {
        let schemes = ["https://", "http://", "HTTPS://", "https:/", "ftp://"];
        let hosts = [
            "example.com",
            "localhost",
            "127.0.0.1",
            "[::1]",
            "[2001:db8::1]",
            "a_b.example",
            "xn--bcher-kva.example",
            "ex%41mple.com",
            "1.2.3",
            "",
        ];
        let ports = ["", ":8443", ":80", ":0", ":65535", ":", ":99999"];
        let mut path = String::new();
        for _ in 0..(g.next() % 8) {
            match g.next() % 4 {
                0 => path.push('/'),
                1 => path.push_str(g.pick(&["%2F", "%2e", "%zz", "..", "."])),
                _ => {
                    let b = u8::try_from(g.next() % 95 + 32).unwrap_or(b'a');
                    path.push(char::from(b));
                }
            }
        }
        if !g.next().is_multiple_of(4) && !path.is_empty() {
            path.insert(0, '/');
        }
        let (scheme, host) = (g.pick(&schemes), g.pick(&hosts));
        format!("{scheme}{host}{}{path}", g.pick(&ports))
    }

    /// Whatever this module accepts, the HTTP layer ureq uses (`http::Uri`)
    /// parses too, and reads the same scheme, host, port and path from it.
    #[test]
    fn accepted_urls_parse_in_the_http_layer() {
        let mut g = Gen(0x9E37_79B9_7F4A_7C15);
        let mut accepted = 0;
        for _ in 0..50_000 {
            let raw = generate(&mut g);
            let Ok(url) = Url::parse(&raw) else { continue };
            accepted += 1;
            let canonical = url.to_string();
            let uri: http::Uri = match canonical.parse() {
                Ok(uri) => uri,
                Err(e) => panic!("{raw:?} -> {canonical:?}: http says {e}"),
            };
            assert_eq!(uri.scheme_str(), Some(url.scheme.as_str()), "{raw:?}");
            assert_eq!(uri.host(), Some(url.host_str().as_str()), "{raw:?}");
            assert_eq!(uri.port_u16(), url.port, "{raw:?}");
            assert_eq!(uri.path(), url.path, "{raw:?}");
        }
        // The generator must reach the accepting side often enough for
        // the check to mean something.
        assert!(accepted > 2_000, "only {accepted} accepted");
        for (raw, _) in ACCEPTED {
            let canonical = Url::parse(raw).map(|u| u.to_string());
            let canonical = canonical.unwrap_or_default();
            assert!(canonical.parse::<http::Uri>().is_ok(), "{raw:?}");
        }
    }

    #[test]
    fn never_panics_on_odd_input() {
        let odd = [
            "h",
            ":",
            "://",
            "http",
            "http:",
            "http://",
            "http://[",
            "http://]",
            "http://[]:",
            "http://:",
            "http://a:",
            "https://[::1]:99999999999",
            "https://a:99999999999999999999",
            "https://%",
            "https://a/%",
            "https://a/%4",
            "https://0x",
            "https://.",
            "https://..",
            "é",
            "😀://x",
        ];
        for raw in odd {
            let _ = Url::parse(raw);
        }
    }
}
