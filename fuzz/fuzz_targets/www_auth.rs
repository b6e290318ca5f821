//! Fuzzes the `WWW-Authenticate` parser with untrusted header values.
//!
//! - It never panics, and what it returns is well-formed: schemes and
//!   parameter names are non-empty lowercase tokens.
//! - Written back as a header (parameters as quoted strings), the parsed
//!   challenges parse to the same challenges again, so the parser does not
//!   depend on how a server happened to quote or space them.
//! - The summary shown to the user has no control characters: parameter
//!   values are server-chosen and must not reach a terminal raw.

#![no_main]

use rivumi_mcp_proto::www_auth;
use libfuzzer_sys::fuzz_target;

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
        })
        && !s.bytes().any(|b| b.is_ascii_uppercase())
}

/// The challenges as a header: `scheme token68` or `scheme k="v", ...`.
fn write(challenges: &[www_auth::Challenge]) -> String {
    let parts: Vec<String> = challenges
        .iter()
        .map(|c| match &c.token68 {
            Some(t) => format!("{} {t}", c.scheme),
            None if c.params.is_empty() => c.scheme.clone(),
            None => {
                let params: Vec<String> = c
                    .params
                    .iter()
                    .map(|(k, v)| {
                        let v = v.replace('\\', "\\\\").replace('"', "\\\"");
                        format!("{k}=\"{v}\"")
                    })
                    .collect();
                format!("{} {}", c.scheme, params.join(", "))
            }
        })
        .collect();
    parts.join(", ")
}

fuzz_target!(|input: &[u8]| {
    let Ok(header) = std::str::from_utf8(input) else {
        return;
    };
    let challenges = www_auth::parse(header);
    for c in &challenges {
        assert!(is_token(&c.scheme), "bad scheme {:?}", c.scheme);
        for (k, _) in &c.params {
            assert!(is_token(k), "bad parameter name {k:?}");
        }
        assert!(c.token68.is_none() || c.params.is_empty());
    }
    let again = www_auth::parse(&write(&challenges));
    assert_eq!(again, challenges, "written back, parses differently");
    let shown = www_auth::describe(&challenges);
    assert!(
        !shown.chars().any(char::is_control),
        "control character in the summary: {shown:?}"
    );
});
