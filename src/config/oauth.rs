//! The `oauth` block of an http server: its keys, values and the
//! combinations that go together.
//!
//! Besides the browser login and `client_credentials` with a secret, the
//! block configures what machines use (the MCP authorization extensions):
//! `private_key_jwt` (`client_key_file`), workload identity (`"grant":
//! "jwt_bearer"` with an assertion from `assertion_file` or
//! `assertion_env_var`), enterprise-managed authorization (`"grant":
//! "enterprise"`: the IdP's ID token, from the same keys, exchanged at
//! `idp_token_endpoint` for an ID-JAG) and DPoP (`dpop`); and what a
//! person without a browser on this machine uses: the device
//! authorization grant (`"grant": "device_code"`, RFC 8628). `refresh`
//! (`"manual"` by default, or `"auto"`) says whether a command may redeem
//! the refresh token itself.

use std::path::PathBuf;

use super::OAuth;
use super::check::{Cursor, item_pos};
use super::rules::{check_env_name, unknown_key};
use crate::jsonpos::{Kind as J, Member, Node, Pos};
use crate::urlcheck::Url;

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
    "client_key_file",
    "assertion_file",
    "assertion_env_var",
    "idp_token_endpoint",
    "idp_client_id",
    "idp_client_secret_env_var",
    "dpop",
    "trust_discovery",
    "refresh",
];

/// `grant`: how a token is obtained. Every place that acts on the grant
/// matches on this, so a new grant is a compile error until each says
/// what it does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Grant {
    /// The browser login: authorization code with PKCE (the default).
    #[default]
    AuthorizationCode,
    /// RFC 8628: a code the user enters on another device.
    DeviceCode,
    /// A confidential client's own credentials.
    ClientCredentials,
    /// A workload identity assertion (RFC 7523 §2.1).
    JwtBearer,
    /// The IdP's ID token exchanged for an ID-JAG, then jwt-bearer.
    Enterprise,
}

impl Grant {
    /// Every grant, in the order messages list them.
    pub const ALL: [Grant; 5] = [
        Grant::AuthorizationCode,
        Grant::DeviceCode,
        Grant::ClientCredentials,
        Grant::JwtBearer,
        Grant::Enterprise,
    ];

    /// The name the config spells it with (and `status` shows).
    pub fn name(self) -> &'static str {
        match self {
            Grant::AuthorizationCode => "authorization_code",
            Grant::DeviceCode => "device_code",
            Grant::ClientCredentials => "client_credentials",
            Grant::JwtBearer => "jwt_bearer",
            Grant::Enterprise => "enterprise",
        }
    }

    /// The grant of a config name.
    pub fn parse(s: &str) -> Option<Grant> {
        Grant::ALL.into_iter().find(|g| g.name() == s)
    }

    /// Whether a person takes part (a browser somewhere); the others are
    /// machine grants, obtained without anyone.
    pub fn interactive(self) -> bool {
        match self {
            Grant::AuthorizationCode | Grant::DeviceCode => true,
            Grant::ClientCredentials
            | Grant::JwtBearer
            | Grant::Enterprise => false,
        }
    }

    /// Whether the grant is made of a JWT the platform hands the job.
    pub fn asserted(self) -> bool {
        match self {
            Grant::JwtBearer | Grant::Enterprise => true,
            Grant::AuthorizationCode
            | Grant::DeviceCode
            | Grant::ClientCredentials => false,
        }
    }
}

/// Where a JWT the platform hands the job comes from: the workload's
/// assertion (`jwt_bearer`) or the IdP's ID token (`enterprise`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Assertion {
    File(PathBuf),
    Env(String),
}

/// `dpop`: off (the default), on, or on when the authorization server
/// lists ES256 in `dpop_signing_alg_values_supported`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DpopMode {
    #[default]
    Off,
    On,
    Auto,
}

/// The identity provider of enterprise-managed authorization (SEP-990).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enterprise {
    pub token_endpoint: Url,
    pub client_id: Option<String>,
    pub client_secret_env_var: Option<String>,
}

/// What an `oauth` block says beyond the browser login.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Machine {
    /// `"grant": "enterprise"`: the IdP of the token exchange.
    pub enterprise: Option<Enterprise>,
    /// `client_key_file`: `private_key_jwt` with this PKCS#8 key.
    pub client_key_file: Option<PathBuf>,
    pub assertion: Option<Assertion>,
    pub dpop: DpopMode,
    /// `"trust_discovery": true`: a machine grant without a configured
    /// authorization server lets the MCP server's metadata choose where
    /// the client secret or the workload JWT goes (check-config warns).
    pub trust_discovery: bool,
}

/// Where the `oauth` block's diagnostics point.
const BASE: &str = "/oauth";

/// Where the value of `key` is in `node` (the block itself when absent).
fn value_pos(node: &Node, key: &str) -> Pos {
    node.get(key).map_or(node.pos, |f| f.value.pos)
}

impl Cursor<'_, '_> {
    pub(super) fn oauth(&mut self, m: &Member) -> Option<OAuth> {
        let errors = self.errors();
        let J::Object(fields) = &m.value.kind else {
            return self.reject(
                BASE,
                m.value.pos,
                "'oauth' must be an object",
            );
        };
        for f in fields {
            if !OAUTH_KEYS.contains(&f.key.as_str()) {
                let (noun, place) = ("unknown key", " in 'oauth'");
                let msg = unknown_key(noun, place, &f.key, OAUTH_KEYS);
                self.soft(BASE, f.key_pos, msg);
            }
        }
        let node = &m.value;
        let client_id = self.block_string(node, "client_id");
        let dynamic = self
            .block_choice(node, "registration", &["dynamic", "none"])
            .is_some_and(|v| v == "dynamic");
        let names = Grant::ALL.map(Grant::name);
        let grant = self
            .block_choice(node, "grant", &names)
            .and_then(|g| Grant::parse(&g))
            .unwrap_or_default();
        let auto_refresh = self
            .block_choice(node, "refresh", &["manual", "auto"])
            .is_some_and(|v| v == "auto");
        let offline_access = self.block_flag(node, "offline_access");
        let step_up = self.block_flag(node, "step_up");
        let client_secret_env_var = self.client(node, dynamic, grant);
        let [authorization_server, authorization_endpoint, token_endpoint] =
            self.endpoints(node);
        let scopes = self.scopes(node);
        let (redirect_port, redirect_path) = self.redirect(node);
        let machine = self.machine(m, grant);
        if self.errors() != errors {
            return None;
        }
        Some(OAuth {
            client_id,
            client_secret_env_var,
            authorization_server,
            authorization_endpoint,
            token_endpoint,
            scopes,
            redirect_port,
            redirect_path,
            dynamic_registration: dynamic,
            grant,
            auto_refresh,
            offline_access,
            step_up,
            machine: machine?,
        })
    }

    /// The block's `key`, a non-empty string without NUL.
    fn block_string(&mut self, node: &Node, key: &str) -> Option<String> {
        let f = node.get(key)?;
        match &f.value.kind {
            J::String(v) if !v.is_empty() && !v.contains('\0') => {
                Some(v.clone())
            }
            _ => self.reject(
                &format!("{BASE}/{key}"),
                f.value.pos,
                format!("'{key}' must be a non-empty string"),
            ),
        }
    }

    /// A string from a fixed set: [`Self::block_string`]'s check, then
    /// membership.
    fn block_choice(
        &mut self,
        node: &Node,
        key: &str,
        allowed: &[&str],
    ) -> Option<String> {
        let v = self.block_string(node, key)?;
        if allowed.contains(&v.as_str()) {
            return Some(v);
        }
        self.reject(
            &format!("{BASE}/{key}"),
            value_pos(node, key),
            format!("'{key}' must be one of: {}", allowed.join(", ")),
        )
    }

    /// The block's `key`, a boolean (false when absent or wrong).
    fn block_flag(&mut self, node: &Node, key: &str) -> bool {
        let Some(f) = node.get(key) else { return false };
        match f.value.kind {
            J::Bool(b) => b,
            _ => {
                self.error(
                    &format!("{BASE}/{key}"),
                    f.value.pos,
                    format!("'{key}' must be true or false"),
                );
                false
            }
        }
    }

    /// Who the client is: `client_id` unless registered dynamically, the
    /// secret `client_credentials` needs, and the variable of that
    /// secret (returned).
    fn client(
        &mut self,
        node: &Node,
        dynamic: bool,
        grant: Grant,
    ) -> Option<String> {
        if node.get("client_id").is_none() && !dynamic {
            self.error(
                BASE,
                node.pos,
                "'oauth' needs 'client_id' (or the opt-in \"registration\": \
                 \"dynamic\")",
            );
        }
        let has_key = node.get("client_key_file").is_some();
        if grant == Grant::ClientCredentials
            && (node.get("client_id").is_none()
                || !(node.get("client_secret_env_var").is_some() || has_key))
        {
            self.error(
                BASE,
                node.pos,
                "\"grant\": \"client_credentials\" needs 'client_id' and \
                 'client_secret_env_var' (or 'client_key_file')"
                    .to_string(),
            );
        }
        let secret_var = self.block_string(node, "client_secret_env_var");
        if let Some(n) = &secret_var {
            let p = format!("{BASE}/client_secret_env_var");
            self.env_var(&p, value_pos(node, "client_secret_env_var"), n);
        }
        secret_var
    }

    /// `authorization_server`, `authorization_endpoint` and
    /// `token_endpoint`: the first, or the other two together.
    fn endpoints(&mut self, node: &Node) -> [Option<Url>; 3] {
        let urls = [
            "authorization_server",
            "authorization_endpoint",
            "token_endpoint",
        ]
        .map(|key| {
            node.get(key)
                .and_then(|f| self.url(&f.value, &format!("{BASE}/{key}")))
        });
        let has = |k: &str| node.get(k).is_some();
        if has("authorization_server")
            && (has("authorization_endpoint") || has("token_endpoint"))
        {
            self.error(
                BASE,
                node.pos,
                "give either 'authorization_server' (discovered) or \
                 'authorization_endpoint' and 'token_endpoint', not both"
                    .to_string(),
            );
        } else if has("authorization_endpoint") != has("token_endpoint") {
            self.error(
                BASE,
                node.pos,
                "'authorization_endpoint' and 'token_endpoint' go together",
            );
        }
        urls
    }

    /// `scopes`: scope tokens (no spaces or quotes).
    fn scopes(&mut self, node: &Node) -> Vec<String> {
        let scopes = self.string_array(node, "scopes", BASE);
        for (i, sc) in scopes.iter().enumerate() {
            let ok = !sc.is_empty()
                && sc.bytes().all(|b| b > 0x20 && b < 0x7f && b != b'"')
                && sc != "\\";
            if !ok {
                let pos = node
                    .get("scopes")
                    .map_or(node.pos, |f| item_pos(&f.value, i));
                self.error(
                    &format!("{BASE}/scopes/{i}"),
                    pos,
                    "not a valid scope token (no spaces or quotes)",
                );
            }
        }
        scopes
    }

    /// `redirect_port` and `redirect_path` (`/callback` by default).
    fn redirect(&mut self, node: &Node) -> (Option<u16>, String) {
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
                    &format!("{BASE}/redirect_port"),
                    f.value.pos,
                    "'redirect_port' must be an integer from 1 to 65535",
                );
            }
        }
        let redirect_path = self
            .block_string(node, "redirect_path")
            .unwrap_or_else(|| "/callback".to_string());
        if !redirect_path.starts_with('/')
            || redirect_path.contains(['?', '#', ' '])
        {
            self.error(
                &format!("{BASE}/redirect_path"),
                value_pos(node, "redirect_path"),
                "'redirect_path' must be a path starting with '/', without \
                 query or fragment"
                    .to_string(),
            );
        }
        (redirect_port, redirect_path)
    }

    /// The keys of [`Machine`], for the block `m` whose grant is `grant`.
    fn machine(&mut self, m: &Member, grant: Grant) -> Option<Machine> {
        let node = &m.value;
        let errors = self.errors();
        let client_key_file =
            self.block_string(node, "client_key_file").map(PathBuf::from);
        if node.get("client_key_file").is_some()
            && node.get("client_secret_env_var").is_some()
        {
            self.error(
                BASE,
                node.pos,
                "give either 'client_secret_env_var' or 'client_key_file' \
                 (private_key_jwt), not both",
            );
        }
        let assertion = self.assertion(node, grant);
        let enterprise = self.enterprise(node, grant == Grant::Enterprise);
        let dpop = self.dpop(node);
        let trust_discovery = self.block_flag(node, "trust_discovery");
        self.machine_destination(m, grant.name(), trust_discovery);
        if self.errors() != errors {
            return None;
        }
        Some(Machine {
            enterprise,
            client_key_file,
            assertion,
            dpop,
            trust_discovery,
        })
    }

    /// `assertion_file` or `assertion_env_var`: where the JWT of an
    /// asserted grant comes from (one of them, and only for those grants).
    fn assertion(&mut self, node: &Node, grant: Grant) -> Option<Assertion> {
        let has = |k: &str| node.get(k).is_some();
        let file =
            self.block_string(node, "assertion_file").map(PathBuf::from);
        let var = self.block_string(node, "assertion_env_var");
        if let Some(v) = &var {
            self.env_var(
                &format!("{BASE}/assertion_env_var"),
                value_pos(node, "assertion_env_var"),
                v,
            );
        }
        let assertion = match (file, var) {
            (Some(_), Some(_)) => {
                self.error(
                    BASE,
                    node.pos,
                    "give either 'assertion_file' or 'assertion_env_var', not both",
                );
                None
            }
            (Some(f), None) => Some(Assertion::File(f)),
            (None, Some(v)) => Some(Assertion::Env(v)),
            (None, None) => None,
        };
        let assertion_grant = grant.asserted();
        let grant = grant.name();
        let both = has("assertion_file") && has("assertion_env_var");
        if assertion_grant && assertion.is_none() && !both {
            self.error(
                BASE,
                node.pos,
                format!(
                    "\"grant\": \"{grant}\" needs 'assertion_file' or \
                     'assertion_env_var' (where the job's JWT comes from)"
                ),
            );
        }
        if assertion_grant && !has("client_id") {
            self.error(
                BASE,
                node.pos,
                format!("\"grant\": \"{grant}\" needs 'client_id'"),
            );
        }
        for k in ["assertion_file", "assertion_env_var"] {
            if has(k) && !assertion_grant {
                self.error(
                    &format!("{BASE}/{k}"),
                    value_pos(node, k),
                    format!("'{k}' goes with \"grant\": \"jwt_bearer\" or \"enterprise\""),
                );
            }
        }
        assertion
    }

    /// The identity provider's keys (`idp_*`), which go with `"grant":
    /// "enterprise"` (`enterprise`) and only with it.
    fn enterprise(
        &mut self,
        node: &Node,
        enterprise: bool,
    ) -> Option<Enterprise> {
        let has = |k: &str| node.get(k).is_some();
        let idp_endpoint = node.get("idp_token_endpoint").and_then(|f| {
            self.url(&f.value, &format!("{BASE}/idp_token_endpoint"))
        });
        let idp_client_id = self.block_string(node, "idp_client_id");
        let idp_secret = self.block_string(node, "idp_client_secret_env_var");
        if let Some(v) = &idp_secret {
            let p = format!("{BASE}/idp_client_secret_env_var");
            self.env_var(&p, value_pos(node, "idp_client_secret_env_var"), v);
        }
        if enterprise && !has("idp_token_endpoint") {
            self.error(
                BASE,
                node.pos,
                "\"grant\": \"enterprise\" needs 'idp_token_endpoint' (the \
                 identity provider's token endpoint)",
            );
        }
        for k in [
            "idp_token_endpoint",
            "idp_client_id",
            "idp_client_secret_env_var",
        ] {
            if has(k) && !enterprise {
                self.error(
                    &format!("{BASE}/{k}"),
                    value_pos(node, k),
                    format!("'{k}' goes with \"grant\": \"enterprise\""),
                );
            }
        }
        idp_endpoint.filter(|_| enterprise).map(|token_endpoint| Enterprise {
            token_endpoint,
            client_id: idp_client_id,
            client_secret_env_var: idp_secret,
        })
    }

    /// `dpop`: true, false or `"auto"`.
    fn dpop(&mut self, node: &Node) -> DpopMode {
        match node.get("dpop").map(|f| &f.value.kind) {
            None | Some(J::Bool(false)) => DpopMode::Off,
            Some(J::Bool(true)) => DpopMode::On,
            Some(J::String(s)) if s == "auto" => DpopMode::Auto,
            Some(_) => {
                self.error(
                    &format!("{BASE}/dpop"),
                    value_pos(node, "dpop"),
                    "'dpop' must be true, false or \"auto\"",
                );
                DpopMode::Off
            }
        }
    }

    /// A machine grant sends a secret (the client secret, a client
    /// assertion, the workload's JWT) with no person to look at where it
    /// goes: the operator names the authorization server, or opts in to
    /// discovery with `"trust_discovery": true`, which is warned about.
    fn machine_destination(&mut self, m: &Member, grant: &str, trust: bool) {
        let base = BASE;
        let node = &m.value;
        let has = |k: &str| node.get(k).is_some();
        let pos =
            node.get("trust_discovery").map_or(node.pos, |f| f.value.pos);
        let machine = matches!(grant, "client_credentials" | "jwt_bearer");
        let configured = has("authorization_server") || has("token_endpoint");
        let what = if grant == "jwt_bearer" {
            "the workload's JWT"
        } else {
            "the client's credentials"
        };
        match (machine, configured, trust) {
            (true, false, false) => self.error(
                base,
                node.pos,
                format!(
                    "\"grant\": \"{grant}\" would send {what} to whatever \
                     authorization server the MCP server names: name it \
                     ('authorization_server', or 'authorization_endpoint' \
                     and 'token_endpoint'), or opt in to the server's choice \
                     with \"trust_discovery\": true"
                ),
            ),
            (true, false, true) => self.soft(
                &format!("{base}/trust_discovery"),
                pos,
                format!(
                    "\"trust_discovery\": the MCP server's metadata chooses \
                     the authorization server that receives {what}; name it \
                     with 'authorization_server' instead"
                ),
            ),
            (_, _, true) => self.soft(
                &format!("{base}/trust_discovery"),
                pos,
                "'trust_discovery' has no effect here (it goes with \
                 \"grant\": \"client_credentials\" or \"jwt_bearer\" and no \
                 configured authorization server)",
            ),
            _ => {}
        }
    }

    /// An environment variable's name at `p`: valid, and (as for
    /// `client_secret_env_var`) reported when it is not set.
    fn env_var(&mut self, p: &str, pos: Pos, name: &str) {
        match check_env_name(name) {
            Ok(()) => self.check_set(p, pos, name),
            Err(msg) => self.error(p, pos, msg),
        }
    }
}
