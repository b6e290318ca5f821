//! The `oauth` block of an http server: its keys, values and the
//! combinations that go together.

use super::OAuth;
use super::check::{Cursor, item_pos};
use super::rules::{check_env_name, unknown_key};
use crate::jsonpos::{Kind as J, Member};

pub(super) const OAUTH_KEYS: &[&str] = &[
    "client_id",
    "client_secret_env_var",
    "authorization_server",
    "authorization_endpoint",
    "token_endpoint",
    "scopes",
    "redirect_port",
    "redirect_path",
    "registration",
    "grant",
    "offline_access",
    "step_up",
];

impl Cursor<'_, '_> {
    pub(super) fn oauth(&mut self, m: &Member) -> Option<OAuth> {
        let errors = self.errors();
        let base = "/oauth";
        let J::Object(fields) = &m.value.kind else {
            self.error(base, m.value.pos, "'oauth' must be an object");
            return None;
        };
        for f in fields {
            if !OAUTH_KEYS.contains(&f.key.as_str()) {
                let (noun, place) = ("unknown key", " in 'oauth'");
                let msg = unknown_key(noun, place, &f.key, OAUTH_KEYS);
                self.soft(base, f.key_pos, msg);
            }
        }
        let node = &m.value;
        let string = |c: &mut Self, key: &str| -> Option<String> {
            let f = node.get(key)?;
            match &f.value.kind {
                J::String(v) if !v.is_empty() && !v.contains('\0') => {
                    Some(v.clone())
                }
                _ => {
                    c.error(
                        &format!("{base}/{key}"),
                        f.value.pos,
                        format!("'{key}' must be a non-empty string"),
                    );
                    None
                }
            }
        };
        let client_id = string(self, "client_id");
        // A string from a fixed set: `string`'s check, then membership.
        let choice = |c: &mut Self, key: &str, allowed: &[&str]| {
            let v = string(c, key)?;
            if allowed.contains(&v.as_str()) {
                return Some(v);
            }
            let pos = node.get(key).map_or(node.pos, |f| f.value.pos);
            c.error(
                &format!("{base}/{key}"),
                pos,
                format!("'{key}' must be one of: {}", allowed.join(", ")),
            );
            None
        };
        let dynamic = choice(self, "registration", &["dynamic", "none"])
            .is_some_and(|v| v == "dynamic");
        let client_credentials = choice(
            self,
            "grant",
            &["authorization_code", "client_credentials"],
        )
        .is_some_and(|v| v == "client_credentials");
        let flag = |c: &mut Self, key: &str| match node.get(key) {
            None => false,
            Some(f) => match f.value.kind {
                J::Bool(b) => b,
                _ => {
                    c.error(
                        &format!("{base}/{key}"),
                        f.value.pos,
                        format!("'{key}' must be true or false"),
                    );
                    false
                }
            },
        };
        let offline_access = flag(self, "offline_access");
        let step_up = flag(self, "step_up");
        if node.get("client_id").is_none() && !dynamic {
            self.error(
                base,
                node.pos,
                "'oauth' needs 'client_id' (or the opt-in \"registration\": \
                 \"dynamic\")",
            );
        }
        if client_credentials
            && (node.get("client_id").is_none()
                || node.get("client_secret_env_var").is_none())
        {
            self.error(
                base,
                node.pos,
                "\"grant\": \"client_credentials\" needs 'client_id' and \
                 'client_secret_env_var'"
                    .to_string(),
            );
        }
        let secret_var = string(self, "client_secret_env_var");
        if let Some(n) = &secret_var {
            let p = format!("{base}/client_secret_env_var");
            let pos = node
                .get("client_secret_env_var")
                .map_or(node.pos, |f| f.value.pos);
            match check_env_name(n) {
                Ok(()) => self.check_set(&p, pos, n),
                Err(msg) => self.error(&p, pos, msg),
            }
        }
        let endpoint = |c: &mut Self, key: &str| {
            node.get(key)
                .and_then(|f| c.url(&f.value, &format!("{base}/{key}")))
        };
        let authorization_server = endpoint(self, "authorization_server");
        let authorization_endpoint = endpoint(self, "authorization_endpoint");
        let token_endpoint = endpoint(self, "token_endpoint");
        let has = |k: &str| node.get(k).is_some();
        if has("authorization_server")
            && (has("authorization_endpoint") || has("token_endpoint"))
        {
            self.error(
                base,
                node.pos,
                "give either 'authorization_server' (discovered) or \
                 'authorization_endpoint' and 'token_endpoint', not both"
                    .to_string(),
            );
        } else if has("authorization_endpoint") != has("token_endpoint") {
            self.error(
                base,
                node.pos,
                "'authorization_endpoint' and 'token_endpoint' go together",
            );
        }
        let scopes = self.string_array(node, "scopes", base);
        for (i, sc) in scopes.iter().enumerate() {
            let ok = !sc.is_empty()
                && sc.bytes().all(|b| b > 0x20 && b < 0x7f && b != b'"')
                && sc != "\\";
            if !ok {
                let pos = node
                    .get("scopes")
                    .map_or(node.pos, |f| item_pos(&f.value, i));
                self.error(
                    &format!("{base}/scopes/{i}"),
                    pos,
                    "not a valid scope token (no spaces or quotes)",
                );
            }
        }
        let mut redirect_port = None;
        if let Some(f) = node.get("redirect_port") {
            if let J::Number(ref n) = f.value.kind {
                redirect_port = n
                    .as_u64()
                    .filter(|p| (1..=65535).contains(p))
                    .map(|p| p as u16)
            }
            if redirect_port.is_none() {
                self.error(
                    &format!("{base}/redirect_port"),
                    f.value.pos,
                    "'redirect_port' must be an integer from 1 to 65535",
                );
            }
        }
        let redirect_path = string(self, "redirect_path")
            .unwrap_or_else(|| "/callback".to_string());
        if !redirect_path.starts_with('/')
            || redirect_path.contains(['?', '#', ' '])
        {
            let pos =
                node.get("redirect_path").map_or(node.pos, |f| f.value.pos);
            self.error(
                &format!("{base}/redirect_path"),
                pos,
                "'redirect_path' must be a path starting with '/', without \
                 query or fragment"
                    .to_string(),
            );
        }
        if self.errors() != errors {
            return None;
        }
        Some(OAuth {
            client_id,
            client_secret_env_var: secret_var,
            authorization_server,
            authorization_endpoint,
            token_endpoint,
            scopes,
            redirect_port,
            redirect_path,
            dynamic_registration: dynamic,
            client_credentials,
            offline_access,
            step_up,
        })
    }
}
