//! Fuzzes the URL checker, cross-checked against the URI parser of the
//! HTTP layer (`http::Uri`, the version ureq connects with).
//!
//! - It never panics, plain http is loopback only, and its canonical form
//!   is a fixed point: the displayed URL parses again to the same URL.
//! - What it accepts is connectable: both the raw string and the canonical
//!   form parse as an `http::Uri` with the same scheme, host, port and
//!   path. A URL that check-config passes but the HTTP layer refuses (or
//!   reads differently) would fail only at connect time, or go elsewhere.
//! - Errors never carry the URL (it may hold a credential): the one
//!   variant with text from it names only the scheme, and only when there
//!   is no '@'. Messages have no control characters.

#![no_main]

use std::net::Ipv6Addr;

use rivumi_mcp_proto::urlcheck;
use libfuzzer_sys::fuzz_target;

use urlcheck::{Host, Scheme, Url, UrlError};

/// Checks that `text` parses as an `http::Uri` naming the same place.
fn same_as_http(text: &str, url: &Url) {
    let uri: http::Uri = match text.parse() {
        Ok(uri) => uri,
        Err(e) => panic!("urlcheck accepts {text:?}, http::Uri refuses: {e}"),
    };
    let scheme = uri.scheme_str().map(str::to_ascii_lowercase);
    let want = match url.scheme {
        Scheme::Http => "http",
        Scheme::Https => "https",
    };
    assert_eq!(scheme.as_deref(), Some(want), "scheme differs for {text:?}");
    let host = uri.host().unwrap_or_else(|| panic!("no host in {text:?}"));
    let same_host = match &url.host {
        Host::Name(name) => host.eq_ignore_ascii_case(name),
        Host::V4(addr) => host.parse() == Ok(*addr),
        Host::V6(addr) => {
            host.strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .and_then(|h| h.parse::<Ipv6Addr>().ok())
                == Some(*addr)
        }
    };
    assert!(same_host, "host differs for {text:?}: {host:?}");
    let default = if want == "https" { 443 } else { 80 };
    let port = uri.port_u16().unwrap_or(default);
    assert_eq!(port, url.port_or_default(), "port differs for {text:?}");
    assert_eq!(uri.path(), url.path, "path differs for {text:?}");
    assert!(uri.query().is_none(), "query in {text:?}");
}

fuzz_target!(|input: &[u8]| {
    let Ok(raw) = std::str::from_utf8(input) else {
        return;
    };
    match Url::parse(raw) {
        Ok(url) => {
            assert!(url.scheme == Scheme::Https || url.is_loopback());
            let canonical = url.to_string();
            assert_eq!(Url::parse(&canonical).as_ref(), Ok(&url));
            same_as_http(raw, &url);
            same_as_http(&canonical, &url);
        }
        Err(e) => {
            // Variants hold no part of the URL but this one, and it only
            // when the URL cannot hold a credential.
            if let UrlError::UnsupportedScheme(Some(name)) = &e {
                assert!(!raw.contains('@'), "scheme shown despite '@'");
                let prefix = raw.get(..name.len()).unwrap_or("");
                assert!(prefix.eq_ignore_ascii_case(name), "not the scheme");
            }
            let msg = e.to_string();
            assert!(!msg.chars().any(char::is_control), "control in {msg:?}");
        }
    }
});
