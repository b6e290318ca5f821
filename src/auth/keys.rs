//! Private keys and signatures: the client's key for `private_key_jwt`
//! (ES256 on P-256, or RS256 with at least 2048 bits), read from a PKCS#8
//! file, and the P-256 key of a DPoP-bound credential, generated here and
//! kept in the credential file.
//!
//! The arithmetic is `ring`'s, which rustls already links (so no crate
//! joins the build; DESIGN.md says why). A key file is read by the
//! credential file's rules (`store::read_private`: no symbolic link, ours,
//! no access for group or others) and must be PKCS#8, PEM (`BEGIN PRIVATE
//! KEY`) or DER. A key never reaches a message, the journal or `Debug`.

use std::path::Path;

use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use serde_json::{Value, json};

use super::jose;
use super::pkce::Secret;
use super::store;
use crate::error::{Error, Result};

/// Larger than any PKCS#8 key of a size ring accepts (RSA 4096 is about
/// 3.3 KiB in PEM; an 8192-bit key, which ring refuses, still fits, so
/// that it is refused by name rather than by size).
const MAX_KEY_FILE: u64 = 16 * 1024;

/// DER of the OIDs that say what a PKCS#8 document holds.
const OID_EC: &[u8] = &[0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P256: &[u8] =
    &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_RSA: &[u8] =
    &[0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];

/// A key that signs JWTs.
pub(crate) enum SigningKey {
    Es256(EcdsaKeyPair),
    Rs256(RsaKeyPair),
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The algorithm only: never the key.
        write!(f, "SigningKey({})", self.alg())
    }
}

impl SigningKey {
    /// The JWS `alg`.
    pub(crate) fn alg(&self) -> &'static str {
        match self {
            SigningKey::Es256(_) => "ES256",
            SigningKey::Rs256(_) => "RS256",
        }
    }

    /// The public JWK of a P-256 key (what a DPoP proof carries); `None`
    /// for RSA, which is never a DPoP key here.
    pub(crate) fn public_jwk(&self) -> Option<Value> {
        let SigningKey::Es256(k) = self else { return None };
        // The uncompressed point: 0x04, then x and y, 32 bytes each.
        let p = k.public_key().as_ref();
        Some(json!({
            "kty": "EC",
            "crv": "P-256",
            "x": jose::b64(&p[1..33]),
            "y": jose::b64(&p[33..65]),
        }))
    }

    /// A signed compact JWT: `header` gets `alg`; `claims` as given.
    pub(crate) fn jwt(
        &self,
        mut header: Value,
        claims: &Value,
    ) -> Result<String> {
        header["alg"] = json!(self.alg());
        let input = jose::signing_input(&header, claims);
        let rng = SystemRandom::new();
        let fail = |_| Error::server("signing the JWT failed");
        let sig = match self {
            SigningKey::Es256(k) => {
                k.sign(&rng, input.as_bytes()).map_err(fail)?.as_ref().to_vec()
            }
            SigningKey::Rs256(k) => {
                let mut sig = vec![0; k.public().modulus_len()];
                k.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &rng,
                    input.as_bytes(),
                    &mut sig,
                )
                .map_err(fail)?;
                sig
            }
        };
        Ok(jose::compact(&input, &sig))
    }

    /// A key from a PKCS#8 document; `what` names it in errors.
    fn from_pkcs8(der: &[u8], what: &str) -> Result<SigningKey> {
        let has = |oid: &[u8]| der.windows(oid.len()).any(|w| w == oid);
        if has(OID_EC) {
            if !has(OID_P256) {
                return Err(Error::refused(format!(
                    "{what} is an EC key on another curve than P-256 (only \
                     P-256, for ES256, is supported)"
                )));
            }
            let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
            return EcdsaKeyPair::from_pkcs8(alg, der, &SystemRandom::new())
                .map(SigningKey::Es256)
                .map_err(|e| {
                    Error::refused(format!(
                        "{what} is not a usable P-256 key ({e})"
                    ))
                });
        }
        if has(OID_RSA) {
            let k = RsaKeyPair::from_pkcs8(der).map_err(|e| {
                let e = e.to_string();
                let why = if e.contains("TooSmall") {
                    "it is shorter than 2048 bits".to_string()
                } else if e.contains("TooLarge") {
                    "it is longer than 4096 bits".to_string()
                } else {
                    format!("{e} (RSA keys of 2048 to 4096 bits are used)")
                };
                Error::refused(format!(
                    "{what} is not a usable RSA key: {why}"
                ))
            })?;
            if k.public().modulus_len() < 256 {
                return Err(Error::refused(format!(
                    "{what} is not a usable RSA key: it is shorter than 2048 bits"
                )));
            }
            return Ok(SigningKey::Rs256(k));
        }
        Err(Error::refused(format!(
            "{what} is not a PKCS#8 EC (P-256) or RSA private key"
        )))
    }
}

/// The DER inside a PEM `PRIVATE KEY` block, or the bytes themselves when
/// they are DER already.
fn pkcs8_der(bytes: &[u8], what: &str) -> Result<Vec<u8>> {
    if bytes.first() == Some(&0x30) {
        return Ok(bytes.to_vec());
    }
    let text = std::str::from_utf8(bytes).map_err(|_| {
        Error::refused(format!("{what} is neither PEM nor DER"))
    })?;
    let begin = "-----BEGIN PRIVATE KEY-----";
    let Some(start) = text.find(begin) else {
        let hint = if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY") {
            "it is encrypted; decrypt it (openssl pkcs8 -in KEY -out NEW)"
        } else if text.contains("-----BEGIN EC PRIVATE KEY")
            || text.contains("-----BEGIN RSA PRIVATE KEY")
        {
            "convert it (openssl pkcs8 -topk8 -nocrypt -in KEY -out NEW)"
        } else {
            "expected a '-----BEGIN PRIVATE KEY-----' block"
        };
        return Err(Error::refused(format!(
            "{what} is not a PKCS#8 key: {hint}"
        )));
    };
    let body = &text[start + begin.len()..];
    let end = body.find("-----END PRIVATE KEY-----").ok_or_else(|| {
        Error::refused(format!("{what}: the PEM block has no END line"))
    })?;
    let b64: String =
        body[..end].chars().filter(|c| !c.is_ascii_whitespace()).collect();
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(b64).map_err(|_| {
        Error::refused(format!("{what}: the PEM block is not valid base64"))
    })
}

/// Reads the key file at `path` (see the module docs for the rules).
pub(crate) fn load(path: &Path) -> Result<SigningKey> {
    let what = format!("key file {}", path.display());
    let owner_only = |m: u32| {
        (m & 0o077 != 0).then(|| {
            format!(
                "has mode {m:03o}; a private key must be readable by you \
                 only (run: chmod 600 {})",
                path.display()
            )
        })
    };
    let bytes =
        store::read_private(path, "key file", MAX_KEY_FILE, &owner_only)?
            .ok_or_else(|| Error::refused(format!("{what} does not exist")))?;
    SigningKey::from_pkcs8(&pkcs8_der(&bytes, &what)?, &what)
}

/// A new P-256 key for DPoP: its PKCS#8 document, base64url, to store.
pub(crate) fn generate_p256() -> Result<Secret> {
    let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let doc = EcdsaKeyPair::generate_pkcs8(alg, &SystemRandom::new())
        .map_err(|_| Error::server("cannot generate a DPoP key"))?;
    Ok(Secret::new(jose::b64(doc.as_ref())))
}

/// The P-256 key stored (by [`generate_p256`]) with a credential.
pub(crate) fn stored_p256(b64: &Secret) -> Result<SigningKey> {
    use base64::Engine;
    let what = "the DPoP key in the credential file";
    let der = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(b64.expose())
        .map_err(|_| {
            Error::refused(format!("{what} is not valid base64url"))
        })?;
    match SigningKey::from_pkcs8(&der, what)? {
        k @ SigningKey::Es256(_) => Ok(k),
        SigningKey::Rs256(_) => {
            Err(Error::refused(format!("{what} is not P-256")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use ring::signature::UnparsedPublicKey;

    fn b64d(s: &str) -> Vec<u8> {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).unwrap()
    }

    /// The public key of a JWK as ring reads it: 0x04 || x || y.
    fn point(jwk: &Value) -> Vec<u8> {
        let mut p = vec![4];
        p.extend(b64d(jwk["x"].as_str().unwrap()));
        p.extend(b64d(jwk["y"].as_str().unwrap()));
        p
    }

    /// Verifies a compact ES256 JWS against a public JWK.
    fn verify(jws: &str, jwk: &Value) -> bool {
        let (input, sig) = jws.rsplit_once('.').unwrap();
        UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point(jwk))
            .verify(input.as_bytes(), &b64d(sig))
            .is_ok()
    }

    /// RFC 7515 appendix A.3: the example ES256 JWS verifies with the
    /// example key (the path every proof and assertion here takes:
    /// R || S, 64 bytes, over the ASCII signing input); a changed payload
    /// does not.
    #[test]
    fn rfc7515_a3_es256_verifies() {
        let jwk = json!({
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
            "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"});
        let jws = "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q";
        assert!(verify(jws, &jwk));
        let tampered =
            jws.replacen(".eyJpc3MiOiJqb2Ui", ".eyJpc3MiOiJqb2Ii", 1);
        assert!(!verify(&tampered, &jwk));
    }

    /// RFC 9449 figure 2: the example DPoP proof verifies with the key in
    /// its own `jwk` header, whose thumbprint is figure 9's `jkt`.
    #[test]
    fn rfc9449_example_proof_verifies() {
        let proof = "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6IkVDIiwieCI6Imw4dEZyaHgtMzR0VjNoUklDUkRZOXpDa0RscEJoRjQyVVFVZldWQVdCRnMiLCJ5IjoiOVZFNGpmX09rX282NHpiVFRsY3VOSmFqSG10NnY5VERWclUwQ2R2R1JEQSIsImNydiI6IlAtMjU2In19.eyJqdGkiOiItQndDM0VTYzZhY2MybFRjIiwiaHRtIjoiUE9TVCIsImh0dSI6Imh0dHBzOi8vc2VydmVyLmV4YW1wbGUuY29tL3Rva2VuIiwiaWF0IjoxNTYyMjYyNjE2fQ.2-GxA6T8lP4vfrg8v-FdWP0A0zdrj8igiMLvqRMUvwnQg4PtFLbdLXiOSsX0x7NVY-FNyJK70nfbV37xRZT3Lg";
        let header: Value =
            serde_json::from_slice(&b64d(proof.split('.').next().unwrap()))
                .unwrap();
        assert_eq!(header["typ"], "dpop+jwt");
        assert!(verify(proof, &header["jwk"]));
        assert_eq!(
            jose::thumbprint(&header["jwk"]).as_deref(),
            Some("0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")
        );
        let claims = jose::claims(proof).unwrap();
        assert_eq!(claims["htu"], "https://server.example.com/token");
    }

    /// What we sign verifies with what we publish, and a stored key signs
    /// as the same key after the round trip.
    #[test]
    fn generated_keys_sign_verifiably() {
        let stored = generate_p256().unwrap();
        let k = stored_p256(&stored).unwrap();
        let jwk = k.public_jwk().unwrap();
        let jwt = k.jwt(json!({"typ": "dpop+jwt"}), &json!({"a": 1})).unwrap();
        assert!(verify(&jwt, &jwk));
        let again = stored_p256(&stored).unwrap();
        assert_eq!(again.public_jwk(), Some(jwk));
        assert_eq!(format!("{k:?}"), "SigningKey(ES256)");
        assert!(stored_p256(&Secret::new("!!".into())).is_err());
    }

    #[test]
    fn pem_and_der_are_told_apart() {
        let what = "key file k";
        let e = |b: &[u8]| pkcs8_der(b, what).unwrap_err().to_string();
        assert!(
            e(b"-----BEGIN EC PRIVATE KEY-----\nAA==\n").contains("-topk8")
        );
        assert!(
            e(b"-----BEGIN ENCRYPTED PRIVATE KEY-----\n")
                .contains("encrypted")
        );
        assert!(e(b"hello").contains("BEGIN PRIVATE KEY"));
        assert!(e(b"-----BEGIN PRIVATE KEY-----\nAAAA\n").contains("END"));
        assert!(
            e(b"-----BEGIN PRIVATE KEY-----\n!!\n-----END PRIVATE KEY-----")
                .contains("base64")
        );
        let der = pkcs8_der(
            b"-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n",
            what,
        )
        .unwrap();
        assert_eq!(der, vec![0x30, 0]);
        let err = SigningKey::from_pkcs8(&der, what).unwrap_err().to_string();
        assert!(err.contains("not a PKCS#8 EC (P-256) or RSA"), "{err}");
    }
}
