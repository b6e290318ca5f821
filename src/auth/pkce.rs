//! PKCE (RFC 7636) and `state`: the login flow's random values. Pure apart
//! from drawing randomness.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// A secret that must never be printed: `Debug` shows its length only.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn new(s: String) -> Secret {
        Secret(s)
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret(<{} bytes redacted>)", self.0.len())
    }
}

/// `n` random bytes as base64url without padding.
pub(crate) fn random_token(n: usize) -> Result<String> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf)
        .map_err(|e| Error::server(format!("no randomness available: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(buf))
}

/// The S256 challenge of a verifier.
pub(crate) fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A fresh PKCE pair and `state`.
#[derive(Debug)]
pub(crate) struct Pkce {
    /// 43 unreserved characters (32 random bytes, base64url).
    pub(crate) verifier: Secret,
    pub(crate) challenge: String,
    /// 32 random bytes (256 bits), base64url.
    pub(crate) state: Secret,
}

impl Pkce {
    pub(crate) fn new() -> Result<Pkce> {
        let verifier = random_token(32)?;
        let challenge = challenge(&verifier);
        Ok(Pkce {
            verifier: Secret(verifier),
            challenge,
            state: Secret(random_token(32)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b() {
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn fresh_values_have_the_right_shape() {
        let p = Pkce::new().unwrap();
        let v = p.verifier.expose();
        assert!((43..=128).contains(&v.len()));
        assert!(
            v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
        );
        assert_eq!(p.challenge, challenge(v));
        assert!(p.state.expose().len() >= 22); // >= 128 bits
        assert_ne!(Pkce::new().unwrap().state, p.state);
        assert!(!format!("{p:?}").contains(v));
    }
}
