//! `WWW-Authenticate` challenges (RFC 9110 §11.6.1), parsed.
//!
//! A header may hold several challenges, each a scheme followed by either a
//! token68 or comma-separated `name=value` parameters whose values are
//! tokens or quoted strings. The commas that separate parameters and the
//! ones that separate challenges look the same; a parameter is recognised
//! by the `=` after its name. Pure; the header value is untrusted text.

/// One challenge: the scheme (lowercased), its parameters (names
/// lowercased, values unescaped) or its token68.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The scheme, lowercased.
    pub scheme: String,
    /// The parameters, names lowercased, values unescaped.
    pub params: Vec<(String, String)>,
    /// The token68, if the challenge has one.
    pub token68: Option<String>,
}

impl Challenge {
    /// The value of the parameter with this (lowercase) name.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// What a 401/403 said in its Bearer challenge: the parameters an
/// authorization acts on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bearer {
    /// The `resource_metadata` URL, as sent.
    pub resource_metadata: Option<String>,
    /// The `scope` asked for, as sent.
    pub scope: Option<String>,
    /// The `error` code, as sent.
    pub error: Option<String>,
}

impl Bearer {
    /// From a `WWW-Authenticate` header value: its Bearer challenge, else
    /// its DPoP one (RFC 9449 §7.1: the same parameters); empty when it
    /// has neither.
    pub fn from_header(header: &str) -> Bearer {
        let all = parse(header);
        let found = all
            .iter()
            .find(|c| c.scheme == "bearer")
            .or_else(|| all.iter().find(|c| c.scheme == "dpop"));
        let Some(b) = found else {
            return Bearer::default();
        };
        let p = |k: &str| b.param(k).map(str::to_string);
        Bearer {
            resource_metadata: p("resource_metadata"),
            scope: p("scope"),
            error: p("error"),
        }
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_token68(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn token(&mut self) -> Option<String> {
        let start = self.i;
        while self.peek().is_some_and(is_tchar) {
            self.i += 1;
        }
        (self.i > start).then(|| {
            String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
        })
    }

    /// At `token BWS "=" not-"="`: a parameter starts here.
    fn at_param(&self) -> bool {
        let mut j = self.i;
        let start = j;
        while self.s.get(j).copied().is_some_and(is_tchar) {
            j += 1;
        }
        if j == start {
            return false;
        }
        while matches!(self.s.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        self.s.get(j) == Some(&b'=') && self.s.get(j + 1) != Some(&b'=')
    }

    fn quoted(&mut self) -> Option<String> {
        if self.peek() != Some(b'"') {
            return None;
        }
        self.i += 1;
        let mut out = vec![];
        loop {
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return Some(String::from_utf8_lossy(&out).into_owned());
                }
                b'\\' => {
                    self.i += 1;
                    out.push(self.peek()?);
                    self.i += 1;
                }
                c => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }
}

/// Parses a header value. Malformed parts end the parse; what was read
/// before them is kept.
pub fn parse(header: &str) -> Vec<Challenge> {
    let mut p = P { s: header.as_bytes(), i: 0 };
    let mut out: Vec<Challenge> = vec![];
    loop {
        while matches!(p.peek(), Some(b' ' | b'\t' | b',')) {
            p.i += 1;
        }
        let Some(scheme) = p.token() else { break };
        let mut ch = Challenge {
            scheme: scheme.to_ascii_lowercase(),
            params: vec![],
            token68: None,
        };
        p.ws();
        if !p.at_param() && p.peek().is_some_and(is_token68) {
            let start = p.i;
            while p.peek().is_some_and(is_token68) {
                p.i += 1;
            }
            while p.peek() == Some(b'=') {
                p.i += 1;
            }
            ch.token68 =
                Some(String::from_utf8_lossy(&p.s[start..p.i]).into_owned());
            out.push(ch);
            continue;
        }
        loop {
            p.ws();
            if !p.at_param() {
                break;
            }
            let Some(name) = p.token() else { break };
            p.ws();
            p.i += 1; // '='
            p.ws();
            let value =
                if p.peek() == Some(b'"') { p.quoted() } else { p.token() };
            let Some(value) = value else {
                out.push(ch);
                return out;
            };
            ch.params.push((name.to_ascii_lowercase(), value));
            p.ws();
            if p.peek() == Some(b',') {
                p.i += 1;
                p.ws();
                while p.peek() == Some(b',') {
                    p.i += 1;
                    p.ws();
                }
            } else {
                break;
            }
        }
        out.push(ch);
    }
    out
}

/// A short human summary: `Bearer (error="invalid_token", scope="a b")`.
pub fn describe(challenges: &[Challenge]) -> String {
    challenges
        .iter()
        .map(|c| {
            let params: Vec<String> = c
                .params
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", crate::term::line(v)))
                .collect();
            if params.is_empty() {
                c.scheme.clone()
            } else {
                format!("{} ({})", c.scheme, params.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_with_params() {
        let c = parse(
            r#"Bearer realm="mcp", error="invalid_token", resource_metadata="https://x/.well-known/oauth-protected-resource", scope="a b""#,
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].scheme, "bearer");
        assert_eq!(c[0].param("error"), Some("invalid_token"));
        assert_eq!(c[0].param("scope"), Some("a b"));
        assert!(c[0].param("resource_metadata").unwrap().starts_with("https"));
    }

    #[test]
    fn several_challenges_tokens_and_escapes() {
        let c = parse(
            r#"Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple""#,
        );
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].param("type"), Some("1"));
        assert_eq!(c[0].param("title"), Some("Login to \"apps\""));
        assert_eq!(c[1].scheme, "basic");
        assert_eq!(c[1].param("realm"), Some("simple"));
    }

    #[test]
    fn token68_and_bare_schemes() {
        let c = parse("Negotiate abc/DEF+g==, Bearer");
        assert_eq!(c[0].token68.as_deref(), Some("abc/DEF+g=="));
        assert_eq!(c[1].scheme, "bearer");
        assert!(c[1].params.is_empty());
    }

    #[test]
    fn malformed_input_does_not_panic() {
        for s in [
            "",
            ",,,",
            "Bearer realm=\"unterminated",
            "Bearer =x",
            "=",
            "B a=",
            "\"x\"",
        ] {
            let _ = parse(s);
        }
        assert_eq!(parse("Bearer realm=\"x").len(), 1);
    }
}
