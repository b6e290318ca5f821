//! Authorization composed around a request: [`authorized`] gives the
//! request the server's credentials and sends it again as the credentials
//! say, so that the request itself (and the session rules) never consult
//! them.

use ureq::Body;
use ureq::http::Response;

use crate::auth::Authorization;
use crate::error::Result;
use crate::www_auth;

/// Sends a request with `auth`'s headers for `method` at `target`
/// (`Authorization`, and a DPoP proof for a DPoP-bound token), and again:
/// once with a fresh proof when the server asks for a DPoP nonce, and
/// after each step-up renewal `auth` makes for a 401 (or a 403 with
/// `insufficient_scope`). The answer that ends this is returned as it
/// is; what an error status means is the caller's.
pub(super) fn authorized(
    auth: &mut Authorization,
    method: &str,
    target: &str,
    mut send: impl FnMut(Vec<(&'static str, String)>) -> Result<Response<Body>>,
) -> Result<Response<Body>> {
    let mut nonce_retried = false;
    loop {
        let resp = send(auth.headers(method, target))?;
        let status = resp.status().as_u16();
        let header = |n: &str| {
            resp.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let challenge = header("www-authenticate").unwrap_or_default();
        // A DPoP nonce the server asks for: once per request.
        if !nonce_retried
            && let Some(retry) = auth.dpop_nonce(
                status,
                &challenge,
                header("dpop-nonce").as_deref(),
                target,
            )
        {
            retry?;
            nonce_retried = true;
            continue;
        }
        let ch = www_auth::Bearer::from_header(&challenge);
        let scope_error = ch.error.as_deref() == Some("insufficient_scope");
        if !(status == 401 || (status == 403 && scope_error)) {
            return Ok(resp);
        }
        match auth.renew(status, ch) {
            None => return Ok(resp),
            Some(renewed) => renewed?,
        }
    }
}
