//! JWS compact serialisation (RFC 7515), JWK thumbprints (RFC 7638) and
//! the DPoP `ath` (RFC 9449 §4.2), by hand: pure functions over JSON and
//! bytes, with the signature itself supplied by the caller (`keys`).
//!
//! Small on purpose: rivumi-mcp only ever *makes* JWTs (client assertions
//! and DPoP proofs) and reads the claims of one it was handed (a workload
//! assertion's `exp`); it never needs to trust a JWT someone else signed,
//! so there is no verification here beyond what the tests need.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// base64url without padding (RFC 7515 §2).
pub(crate) fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The JWS signing input `BASE64URL(header) . BASE64URL(claims)`.
pub(crate) fn signing_input(header: &Value, claims: &Value) -> String {
    format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    )
}

/// The compact serialisation: the signing input, then the signature.
pub(crate) fn compact(input: &str, signature: &[u8]) -> String {
    format!("{input}.{}", b64(signature))
}

/// The RFC 7638 thumbprint of a public JWK: SHA-256 over the required
/// members only, in lexicographic order, without whitespace; `None` for a
/// key type other than EC and RSA, or when a member is missing.
pub(crate) fn thumbprint(jwk: &Value) -> Option<String> {
    let members: &[&str] = match jwk.get("kty")?.as_str()? {
        "EC" => &["crv", "kty", "x", "y"],
        "RSA" => &["e", "kty", "n"],
        _ => return None,
    };
    // serde_json's Map keeps keys sorted (no preserve_order feature), and
    // `to_string` writes no whitespace: exactly RFC 7638's canonical form.
    let mut canonical = Map::new();
    for m in members {
        canonical.insert(
            m.to_string(),
            Value::String(jwk.get(*m)?.as_str()?.into()),
        );
    }
    let json = Value::Object(canonical).to_string();
    Some(b64(&Sha256::digest(json.as_bytes())))
}

/// The `ath` claim of a DPoP proof: base64url(SHA-256(access token)).
pub(crate) fn ath(access_token: &str) -> String {
    b64(&Sha256::digest(access_token.as_bytes()))
}

/// The claims of a compact JWT, unverified (its signature is the
/// audience's business): `None` unless it has three parts and a JSON
/// object in the middle.
pub(crate) fn claims(jwt: &str) -> Option<Map<String, Value>> {
    let mut parts = jwt.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(payload).ok()?;
    match serde_json::from_slice(&bytes).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// A fresh `jti`: 16 random bytes, base64url.
pub(crate) fn jti() -> crate::error::Result<String> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| {
        crate::error::Error::server(format!("no randomness for a JWT id: {e}"))
    })?;
    Ok(b64(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// RFC 7638 §3.1: the example RSA key and its published thumbprint;
    /// optional members change nothing.
    #[test]
    fn rfc7638_thumbprint() {
        let n = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw";
        let jwk = json!({"kty": "RSA", "n": n, "e": "AQAB",
                         "alg": "RS256", "kid": "2011-04-29"});
        assert_eq!(
            thumbprint(&jwk).as_deref(),
            Some("NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
        );
        assert_eq!(thumbprint(&json!({"kty": "RSA", "n": n})), None);
        assert_eq!(thumbprint(&json!({"kty": "oct", "k": "x"})), None);
    }

    /// RFC 9449 Figures 5 and 9: the example proof key's `jkt`.
    #[test]
    fn rfc9449_jkt() {
        let jwk = json!({"kty": "EC", "crv": "P-256",
            "x": "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs",
            "y": "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA"});
        assert_eq!(
            thumbprint(&jwk).as_deref(),
            Some("0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")
        );
    }

    /// RFC 9449 §7.1 (Figures 12 and 13): the example token's `ath`.
    #[test]
    fn rfc9449_ath() {
        assert_eq!(
            ath("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"),
            "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
        );
    }

    #[test]
    fn claims_of_a_compact_jwt() {
        let input =
            signing_input(&json!({"alg": "ES256"}), &json!({"exp": 5}));
        let jwt = compact(&input, b"sig");
        assert_eq!(claims(&jwt).unwrap()["exp"], json!(5));
        for bad in ["", "a.b", "a.b.c.d", "x.eyJ.y", "x.WzFd.y"] {
            assert!(claims(bad).is_none(), "{bad}");
        }
        assert_ne!(jti().unwrap(), jti().unwrap());
        assert_eq!(jti().unwrap().len(), 22);
    }
}
