//! DPoP (RFC 9449): proofs that the sender of a token holds its key.
//!
//! A DPoP-bound credential has its own P-256 key, generated at login and
//! kept in the credential file beside the token (`keys`). Every request
//! that presents the token, and the token request that obtains it, carries
//! a fresh proof: a JWT of type `dpop+jwt` with the public key in its
//! header, a new `jti`, the method (`htm`), the URL without query or
//! fragment (`htu`), `iat` and, with a token, its hash (`ath`).
//!
//! A server may require a nonce (`use_dpop_nonce`, with `DPoP-Nonce`):
//! nonces are kept per origin for the command's life, and the request
//! that was refused is sent once more with the new nonce; a server that
//! refuses that one too is not asked a third time (the caller's rule). A
//! nonce that is long or holds anything but visible ASCII is refused.

use std::sync::Mutex;

use serde_json::{Value, json};

use super::jose;
use super::keys::SigningKey;
use crate::error::{Error, Kind, Result};
use crate::urlcheck::Url;

/// The longest nonce taken from a server.
const MAX_NONCE: usize = 512;

/// The proof key and the nonces servers asked for.
pub(crate) struct Dpop {
    key: SigningKey,
    jwk: Value,
    /// (origin, nonce), for the command's life.
    nonces: Mutex<Vec<(String, String)>>,
}

impl std::fmt::Debug for Dpop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dpop")
            .field("jkt", &self.thumbprint())
            .finish_non_exhaustive()
    }
}

/// What a proof's `htu` and the nonce's origin are made from: the URL
/// without query and fragment, and its origin.
fn htu_and_origin(url: &str) -> (String, String) {
    let htu = url.split(['?', '#']).next().unwrap_or(url).to_string();
    let origin =
        Url::parse(&htu).map(|u| u.origin()).unwrap_or_else(|_| htu.clone());
    (htu, origin)
}

impl Dpop {
    /// DPoP with `key`, which must be a P-256 key.
    pub(crate) fn new(key: SigningKey) -> Result<Dpop> {
        let jwk = key.public_jwk().ok_or_else(|| {
            Error::server("a DPoP key must be an EC P-256 key")
        })?;
        Ok(Dpop { key, jwk, nonces: Mutex::new(vec![]) })
    }

    /// The key's RFC 7638 thumbprint (the token's `cnf.jkt`).
    pub(crate) fn thumbprint(&self) -> String {
        jose::thumbprint(&self.jwk).unwrap_or_default()
    }

    /// A fresh proof for `method` `url`, presenting `access_token` when
    /// there is one, with the nonce the URL's origin asked for.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<String> {
        let (htu, origin) = htu_and_origin(url);
        let mut claims = json!({
            "jti": jose::jti()?,
            "htm": method,
            "htu": htu,
            "iat": super::store::now(),
        });
        if let Some(t) = access_token {
            claims["ath"] = json!(jose::ath(t));
        }
        let nonces = self.nonces.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, n)) = nonces.iter().find(|(o, _)| *o == origin) {
            claims["nonce"] = json!(n);
        }
        drop(nonces);
        self.key.jwt(json!({"typ": "dpop+jwt", "jwk": self.jwk}), &claims)
    }

    /// Takes the `DPoP-Nonce` a server at `url` sent with a
    /// `use_dpop_nonce` refusal: `Ok(true)` when it is new for that
    /// origin (so the request is worth sending again), `Ok(false)` when it
    /// is the nonce the refused proof already carried. A missing, long or
    /// malformed nonce is an error.
    pub(crate) fn take_nonce(
        &self,
        url: &str,
        nonce: Option<&str>,
    ) -> Result<bool> {
        let (_, origin) = htu_and_origin(url);
        let nonce = nonce.unwrap_or("");
        // RFC 9449 §8.1: nonce = 1*NQCHAR (visible ASCII but `"` and `\`).
        let ok = !nonce.is_empty()
            && nonce.len() <= MAX_NONCE
            && nonce
                .bytes()
                .all(|b| (0x21..0x7f).contains(&b) && b != b'"' && b != b'\\');
        if !ok {
            return Err(Error::new(
                Kind::Auth,
                format!(
                    "{origin} asked for a DPoP nonce (use_dpop_nonce) but sent \
                     no usable DPoP-Nonce (1 to {MAX_NONCE} visible ASCII \
                     characters)"
                ),
            ));
        }
        let mut nonces = self.nonces.lock().unwrap_or_else(|e| e.into_inner());
        match nonces.iter_mut().find(|(o, _)| *o == origin) {
            Some((_, n)) if n == nonce => Ok(false),
            Some((_, n)) => {
                *n = nonce.to_string();
                Ok(true)
            }
            None => {
                nonces.push((origin, nonce.to_string()));
                Ok(true)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::keys;

    fn dpop() -> Dpop {
        Dpop::new(keys::stored_p256(&keys::generate_p256().unwrap()).unwrap())
            .unwrap()
    }

    #[test]
    fn a_proof_has_what_rfc9449_asks() {
        let d = dpop();
        let url = "http://127.0.0.1:9/mcp?x=1#f";
        let p = d.proof("POST", url, Some("tok")).unwrap();
        let c = jose::claims(&p).unwrap();
        assert_eq!(c["htm"], "POST");
        assert_eq!(c["htu"], "http://127.0.0.1:9/mcp");
        assert_eq!(c["ath"], jose::ath("tok"));
        assert!(c.get("nonce").is_none());
        let p2 = d.proof("POST", url, None).unwrap();
        let c2 = jose::claims(&p2).unwrap();
        assert_ne!(c["jti"], c2["jti"], "every proof is fresh");
        assert!(c2.get("ath").is_none());
        assert_eq!(d.thumbprint().len(), 43);
    }

    #[test]
    fn nonces_are_kept_per_origin_and_checked() {
        let d = dpop();
        let rs = "http://127.0.0.1:9/mcp";
        assert!(d.take_nonce(rs, Some("n1")).unwrap());
        assert!(
            !d.take_nonce(rs, Some("n1")).unwrap(),
            "the same nonce again"
        );
        let c = jose::claims(&d.proof("POST", rs, None).unwrap()).unwrap();
        assert_eq!(c["nonce"], "n1");
        let other =
            d.proof("POST", "http://127.0.0.1:10/token", None).unwrap();
        assert!(jose::claims(&other).unwrap().get("nonce").is_none());
        assert!(d.take_nonce(rs, Some("n2")).unwrap());
        for bad in [None, Some(""), Some("a b"), Some("a\u{1}"), Some("q\"")] {
            assert!(d.take_nonce(rs, bad).is_err(), "{bad:?}");
        }
        let long = "n".repeat(10 * 1024);
        let e = d.take_nonce(rs, Some(&long)).unwrap_err().to_string();
        assert!(e.contains("no usable DPoP-Nonce"), "{e}");
    }
}
