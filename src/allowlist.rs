//! The allowlist: the only launch authority, and server fingerprints.
//!
//! `RIVUMI_MCP_ALLOWLIST` names the servers that may start. It is read from
//! the invoking environment only; no file of the project can change it.
//! Entries are comma-separated, trimmed, exact and case-sensitive; empty
//! entries are ignored; `*` is refused (there are no wildcards). An entry
//! may pin what launching depends on: `name@<fingerprint>`.
//!
//! A fingerprint is 20 hex digits: the first 16 are a SHA-256 over the
//! canonical launch spec (this is what makes a pin hold), and each of the
//! last 4 is one hex digit of a SHA-256 over one class of the spec
//! (stdio: command, args, env, cwd; http: url, headers, auth, oauth), so a
//! mismatch can say which class most likely changed.
//!
//! The spec is the text as written: `${VAR}` references unexpanded (the
//! fingerprint pins which variables feed the launch, not their values,
//! which may be secrets and may rotate), and for a stdio server the
//! effective directory it runs in (`cwd`, else the config file's
//! directory, made absolute), since `args: ["."]` depends on it. Header
//! templates count whole (the variable names and the literal text around
//! them): which variable feeds which header decides where a token goes.
//!
//! What was added to a class after pins existed (a `protocol` other than
//! `auto`; `step_up`, `offline_access` and `"registration": "dynamic"` in
//! an `oauth` block) enters the canonical form only when set, so a pin of
//! an entry without it stays valid. A changed `protocol` is named as such:
//! the verdict tries the other eras against the pin.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::config::{Assertion, DpopMode, Server, Transport};

pub(crate) const VAR: &str = "RIVUMI_MCP_ALLOWLIST";

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    name: String,
    pin: Option<String>,
}

/// A parsed allowlist.
#[derive(Debug, Clone, Default)]
pub(crate) struct Allowlist {
    entries: Vec<Entry>,
}

/// Whether a server may start, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Allowed,
    Pinned,
    NotAllowed,
    /// Pinned, but the spec changed; names the classes that differ (empty
    /// when the class digits happen to agree).
    Mismatch(Vec<&'static str>),
}

impl Verdict {
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Verdict::Allowed => "allowed",
            Verdict::Pinned => "pinned",
            Verdict::NotAllowed => "not allowed",
            Verdict::Mismatch(_) => "pin mismatch",
        }
    }
}

impl Allowlist {
    /// Parses the variable's value (`None` when unset).
    pub(crate) fn parse(raw: Option<&str>) -> Result<Allowlist, String> {
        let mut entries: Vec<Entry> = vec![];
        for item in raw.unwrap_or("").split(',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            if item.contains('*') {
                return Err(format!(
                    "{VAR}: '{item}' is a wildcard; name each server \
                     (there are no wildcards)"
                ));
            }
            let (name, pin) = match item.split_once('@') {
                Some((n, p)) => (n, Some(p)),
                None => (item, None),
            };
            if crate::config::check_name(name).is_err() {
                return Err(format!(
                    "{VAR}: '{}' is not a server name",
                    crate::term::line(name)
                ));
            }
            let pin = match pin {
                Some(p)
                    if p.len() == 20
                        && p.bytes().all(|b| b.is_ascii_hexdigit()) =>
                {
                    Some(p.to_ascii_lowercase())
                }
                Some(p) => {
                    return Err(format!(
                        "{VAR}: '{name}@{}' has a malformed fingerprint \
                         (20 hex digits, as check-config prints them)",
                        crate::term::line(p)
                    ));
                }
                None => None,
            };
            let entry = Entry { name: name.to_string(), pin };
            if let Some(prev) = entries.iter().find(|e| e.name == entry.name) {
                if prev.pin != entry.pin {
                    return Err(format!(
                        "{VAR}: '{name}' is listed twice with different pins"
                    ));
                }
                continue;
            }
            entries.push(entry);
        }
        Ok(Allowlist { entries })
    }

    /// The names listed, in order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.name.as_str())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `name` appears at all (pinned or not).
    pub(crate) fn lists(&self, name: &str) -> bool {
        self.entries.iter().any(|e| e.name == name)
    }

    /// The verdict for a valid server entry.
    pub(crate) fn verdict(&self, server: &Server) -> Verdict {
        let Some(e) = self.entries.iter().find(|e| e.name == server.name)
        else {
            return Verdict::NotAllowed;
        };
        let Some(pin) = &e.pin else { return Verdict::Allowed };
        let now = fingerprint(server);
        if *pin == now {
            return Verdict::Pinned;
        }
        // Only the era changed? Say so rather than naming class 0.
        let era = crate::mcp::Choice::NAMES
            .iter()
            .filter_map(|n| crate::mcp::Choice::parse(n))
            .filter(|c| *c != server.protocol)
            .any(|c| {
                let other = Server { protocol: c, ..server.clone() };
                *pin == fingerprint(&other)
            });
        if era {
            return Verdict::Mismatch(vec!["protocol"]);
        }
        let classes = class_names(server);
        let changed = pin
            .bytes()
            .skip(16)
            .zip(now.bytes().skip(16))
            .zip(classes)
            .filter(|((a, b), _)| a != b)
            .map(|(_, c)| *c)
            .collect();
        Verdict::Mismatch(changed)
    }
}

fn class_names(server: &Server) -> &'static [&'static str; 4] {
    match server.transport {
        Transport::Stdio(_) => &["command", "args", "env", "cwd/sandbox"],
        Transport::Http(_) => &["url", "headers", "auth", "oauth"],
    }
}

/// The canonical launch spec, one JSON value per class.
fn classes(server: &Server) -> [Value; 4] {
    let mut parts = transport_classes(server);
    // The era spoken (what is sent, and how): with what is reached, and
    // only when chosen, so that pins of entries without it stay valid.
    if server.protocol != crate::mcp::Choice::Auto
        && let Value::Array(a) = &mut parts[0]
    {
        let era = crate::mcp::Choice::NAMES
            .iter()
            .find(|n| crate::mcp::Choice::parse(n) == Some(server.protocol));
        a.push(json!({"protocol": era}));
    }
    parts
}

// Long on purpose: every field that decides what runs or what is sent is
// listed here, in one place, so a reviewer sees all a pin covers (and a
// new key is one line here).
/// The canonical JSON of each class of a server's transport.
fn transport_classes(server: &Server) -> [Value; 4] {
    match &server.transport {
        Transport::Stdio(s) => {
            let mut env: Vec<(&String, &String)> =
                s.env.iter().map(|(k, v)| (k, v)).collect();
            env.sort();
            let mut passed: Vec<&String> = s.env_vars.iter().collect();
            passed.sort();
            [
                json!(["stdio", s.command]),
                json!(s.args),
                json!({"env": env, "env_vars": passed}),
                {
                    let cwd = json!(
                        s.cwd_path.as_ref().map(|p| p.display().to_string())
                    );
                    // The whole sandbox block, so that a config that
                    // loosens it no longer matches a pin; only when set,
                    // so that entries without one keep their fingerprints.
                    match &s.sandbox {
                        None => cwd,
                        Some(b) => json!({"cwd": cwd, "sandbox": b.to_json()}),
                    }
                },
            ]
        }
        Transport::Http(h) => {
            // Names and templates as written (`${VAR}` unexpanded): which
            // variable feeds a header decides whose token goes there.
            let mut headers: Vec<(String, &String)> = h
                .headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v))
                .collect();
            headers.sort();
            let oauth = h.oauth.as_ref().map(|o| {
                let mut v = json!({
                    "client_id": o.client_id,
                    "secret_var": o.client_secret_env_var,
                    "as": o.authorization_server.as_ref().map(|u| u.to_string()),
                    "authz": o.authorization_endpoint.as_ref().map(|u| u.to_string()),
                    "token": o.token_endpoint.as_ref().map(|u| u.to_string()),
                    "scopes": o.scopes,
                    "port": o.redirect_port,
                    "path": o.redirect_path,
                });
                // What a login asks for and when it runs: only when set,
                // as below.
                if o.dynamic_registration {
                    v["registration"] = json!("dynamic");
                }
                if o.offline_access {
                    v["offline_access"] = json!(true);
                }
                if o.step_up {
                    v["step_up"] = json!(true);
                }
                // Only when set: other blocks keep their fingerprints.
                if o.grant == crate::config::Grant::DeviceCode {
                    v["grant"] = json!(o.grant.name());
                }
                // Where keys and assertions come from and go to (the IdP
                // is sent the ID token): only when set, so that the
                // fingerprints of blocks without them stay what they were.
                let m = &o.machine;
                if *m != crate::config::Machine::default() {
                    v["machine"] = json!({
                        "grant": o.grant.name(),
                        "key": m.client_key_file.as_ref().map(|p| p.display().to_string()),
                        "assertion": match &m.assertion {
                            Some(Assertion::File(p)) => json!(["file", p.display().to_string()]),
                            Some(Assertion::Env(v)) => json!(["env", v]),
                            None => Value::Null,
                        },
                        "idp": m.enterprise.as_ref().map(|e| {
                            json!([e.token_endpoint.to_string(), e.client_id,
                                   e.client_secret_env_var])
                        }),
                        "dpop": match m.dpop {
                            DpopMode::Off => "off",
                            DpopMode::On => "on",
                            DpopMode::Auto => "auto",
                        },
                    });
                    if m.trust_discovery {
                        v["machine"]["trust_discovery"] = json!(true);
                    }
                }
                v
            });
            [
                // The canonical URL when there is nothing to expand (its
                // spelling does not count), else the text as written.
                json!([
                    "http",
                    if h.url_text.contains("${") {
                        h.url_text.clone()
                    } else {
                        h.url.to_string()
                    }
                ]),
                json!(headers),
                auth_class(server, h),
                json!(oauth),
            ]
        }
    }
}

/// How an HTTP server authenticates, for its fingerprint: the mode, the
/// bearer variable, and the credential commands' argvs (when there are
/// any: they run on this machine, so changing one needs a new approval).
fn auth_class(server: &Server, h: &crate::config::Http) -> Value {
    let mut v = json!({"mode": server.auth_mode(),
                       "bearer_var": h.bearer_token_env_var});
    if let Some(argv) = &h.token_command {
        v["token_command"] = json!(argv);
    }
    if !h.headers_command.is_empty() {
        let mut cmds = h.headers_command.clone();
        for (k, _) in &mut cmds {
            k.make_ascii_lowercase();
        }
        cmds.sort();
        v["headers_command"] = json!(cmds);
    }
    v
}

/// The fingerprint of a server's launch spec (see the module docs).
pub(crate) fn fingerprint(server: &Server) -> String {
    let parts = classes(server);
    let mut all = serde_json::to_string(&parts).unwrap_or_default();
    // The config's `tools` filter decides what the launch exposes, so it
    // is pinned too; only when set, so other fingerprints stay as they
    // were (no class digit: the class digits say what is launched).
    if let Some(f) = &server.tools {
        let filter = json!({"tools": {"allow": f.allow, "deny": f.deny}});
        all.push_str(&filter.to_string());
    }
    let mut out =
        crate::files::hex(&Sha256::digest(all.as_bytes()))[..16].to_string();
    for p in &parts {
        let s = serde_json::to_string(p).unwrap_or_default();
        out.push_str(&crate::files::hex(&Sha256::digest(s.as_bytes()))[..1]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Stdio;

    fn stdio(name: &str, command: &str, args: &[&str]) -> Server {
        Server {
            name: name.into(),
            transport: Transport::Stdio(Stdio {
                command: command.into(),
                args: args.iter().map(|s| s.to_string()).collect(),
                env: vec![],
                env_vars: vec![],
                cwd_path: None,
                expand: true,
                sandbox: None,
            }),
            startup_timeout: None,
            tool_timeout: None,
            protocol: crate::mcp::Choice::Auto,
            disabled: false,
            tools: None,
        }
    }

    #[test]
    fn parsing_rules() {
        let a = Allowlist::parse(Some(" a , ,b,,")).unwrap();
        assert!(a.lists("a") && a.lists("b") && !a.lists("A"));
        assert!(Allowlist::parse(None).unwrap().is_empty());
        assert!(Allowlist::parse(Some("")).unwrap().is_empty());
        assert!(Allowlist::parse(Some("*")).unwrap_err().contains("wildcard"));
        assert!(Allowlist::parse(Some("a b")).is_err());
        assert!(Allowlist::parse(Some("a@xyz")).is_err());
    }

    #[test]
    fn pins_match_and_say_what_changed() {
        let s = stdio("a", "srv", &["-x"]);
        let fp = fingerprint(&s);
        assert_eq!(fp.len(), 20);
        let list = Allowlist::parse(Some(&format!("a@{fp}"))).unwrap();
        assert_eq!(list.verdict(&s), Verdict::Pinned);
        let changed = stdio("a", "srv", &["-y"]);
        match list.verdict(&changed) {
            Verdict::Mismatch(c) => {
                assert!(c.contains(&"args") || c.is_empty())
            }
            v => panic!("{v:?}"),
        }
        assert_eq!(
            Allowlist::parse(Some("b")).unwrap().verdict(&s),
            Verdict::NotAllowed
        );
    }

    /// The server of a one-server config whose `oauth` block is `oauth`.
    fn with_oauth(oauth: &str) -> Server {
        entry(&format!(
            r#"{{"url": "https://x.example/mcp", "oauth": {oauth}}}"#
        ))
    }

    /// Where an assertion is sent (the IdP) and read from are part of
    /// the fingerprint; a block without machine keys keeps the
    /// fingerprint it had before they existed.
    #[test]
    fn machine_keys_are_in_the_fingerprint() {
        let plain = fingerprint(&with_oauth(r#"{"client_id": "c"}"#));
        // What the build before the machine keys computed for this block.
        assert_eq!(plain, "02886da123d923564401");
        let corp = |idp: &str| {
            fingerprint(&with_oauth(&format!(
                r#"{{"client_id": "c", "grant": "enterprise",
                    "assertion_env_var": "T", "idp_token_endpoint": "{idp}"}}"#
            )))
        };
        let a = corp("https://idp.example/token");
        assert_ne!(a, plain);
        assert_ne!(a, corp("https://evil.example/token"));
        let key = fingerprint(&with_oauth(
            r#"{"client_id": "c", "grant": "client_credentials", "client_key_file": "/k.pem",
                "authorization_server": "https://as.example"}"#,
        ));
        assert_ne!(key, plain);
        // The opt-in to the server's choice of authorization server.
        let trusting = fingerprint(&with_oauth(
            r#"{"client_id": "c", "trust_discovery": true}"#,
        ));
        assert_ne!(trusting, plain);
    }

    /// The server of a one-server config whose entry is `entry`.
    fn entry(entry: &str) -> Server {
        let text = format!(r#"{{"mcpServers": {{"a": {entry}}}}}"#);
        let c = crate::config::validate(
            &text,
            std::path::Path::new("t.json"),
            std::path::Path::new("/"),
            false,
            &|_| Some("v".into()),
        );
        c.entries[0].server.clone().expect("a valid entry")
    }

    /// The verdict for `now` of a list pinning `then`.
    fn verdict(then: &Server, now: &Server) -> Verdict {
        let list = format!("a@{}", fingerprint(then));
        Allowlist::parse(Some(&list)).unwrap().verdict(now)
    }

    /// Which variable feeds a header, and the literal text around it,
    /// are pinned (issue 22, item 4); the header names' case is not.
    #[test]
    fn header_templates_are_in_the_fingerprint() {
        let http = |h: &str| {
            entry(&format!(
                r#"{{"url": "https://x.example/mcp", "headers": {h}}}"#
            ))
        };
        let docs = http(r#"{"X-Api-Key": "${DOCS_KEY}"}"#);
        for other in [
            r#"{"X-Api-Key": "${GITHUB_TOKEN}"}"#,
            r#"{"X-Api-Key": "literal"}"#,
            r#"{"X-Api-Key": "k ${DOCS_KEY}"}"#,
        ] {
            let v = verdict(&docs, &http(other));
            assert!(
                matches!(&v, Verdict::Mismatch(c) if c.is_empty() || c == &["headers"]),
                "{other}: {v:?}"
            );
        }
        assert_eq!(
            verdict(&docs, &http(r#"{"x-api-key": "${DOCS_KEY}"}"#)),
            Verdict::Pinned
        );
    }

    /// `step_up`, `offline_access`, `registration` and `protocol` change
    /// what is sent, so they change the fingerprint; left out (or at
    /// their defaults) they leave it as it was.
    #[test]
    fn login_switches_and_the_era_are_in_the_fingerprint() {
        let plain = with_oauth(r#"{"client_id": "c"}"#);
        for set in [
            r#"{"client_id": "c", "step_up": true}"#,
            r#"{"client_id": "c", "offline_access": true}"#,
            r#"{"registration": "dynamic"}"#,
        ] {
            assert_ne!(fingerprint(&with_oauth(set)), fingerprint(&plain));
        }
        let defaults = r#"{"client_id": "c", "step_up": false,
            "offline_access": false, "registration": "none"}"#;
        assert_eq!(fingerprint(&with_oauth(defaults)), fingerprint(&plain));
        for base in [
            r#""url": "https://x.example/mcp""#,
            r#""command": "srv", "args": ["-x"]"#,
        ] {
            let auto = entry(&format!("{{{base}}}"));
            let same = entry(&format!(r#"{{{base}, "protocol": "auto"}}"#));
            assert_eq!(fingerprint(&auto), fingerprint(&same));
            for era in ["modern", "legacy"] {
                let now =
                    entry(&format!(r#"{{{base}, "protocol": "{era}"}}"#));
                assert_eq!(
                    verdict(&auto, &now),
                    Verdict::Mismatch(vec!["protocol"])
                );
                assert_eq!(
                    verdict(&now, &auto),
                    Verdict::Mismatch(vec!["protocol"])
                );
            }
        }
    }

    /// The server of a one-server config with these `url`-level keys.
    fn http_with(keys: &str) -> Server {
        let text = format!(
            r#"{{"mcpServers": {{"a": {{"url": "https://x.example/mcp", {keys}}}}}}}"#
        );
        let c = crate::config::validate(
            &text,
            std::path::Path::new("t.json"),
            std::path::Path::new("/"),
            false,
            &|_| Some("v".into()),
        );
        c.entries[0].server.clone().expect("a valid entry")
    }

    /// The credential command runs on this machine: its argv is pinned.
    /// The device grant changes the fingerprint; a block without it keeps
    /// the one it had.
    #[test]
    fn the_token_command_and_the_device_grant_are_in_the_fingerprint() {
        let cmd = |argv: &str| {
            let s = http_with(&format!(r#""token_command": {argv}"#));
            assert_eq!(s.auth_mode(), "command");
            fingerprint(&s)
        };
        let op = cmd(r#"["op", "read", "op://v/i/token"]"#);
        assert_ne!(op, cmd(r#"["op", "read", "op://v/other/token"]"#));
        assert_ne!(op, cmd(r#"["/tmp/op", "read", "op://v/i/token"]"#));
        let header = |argv: &str| {
            fingerprint(&http_with(&format!(
                r#""headers_command": {{"X-Api-Key": {argv}}}"#
            )))
        };
        let key = header(r#"["pass", "show", "k"]"#);
        assert_ne!(key, header(r#"["pass", "show", "other"]"#));
        assert_ne!(key, fingerprint(&http_with(r#""headers": {}"#)));
        let plain = fingerprint(&with_oauth(r#"{"client_id": "c"}"#));
        assert_eq!(plain, "02886da123d923564401");
        let device = fingerprint(&with_oauth(
            r#"{"client_id": "c", "grant": "device_code"}"#,
        ));
        assert_ne!(device, plain);
        // Refresh is how, not what: it does not change what is reached.
        let auto = fingerprint(&with_oauth(
            r#"{"client_id": "c", "refresh": "auto"}"#,
        ));
        assert_eq!(auto, plain);
    }

    #[test]
    fn fingerprint_is_stable_and_sensitive() {
        let a = fingerprint(&stdio("a", "srv", &["-x"]));
        assert_eq!(a, fingerprint(&stdio("other-name", "srv", &["-x"])));
        assert_ne!(a, fingerprint(&stdio("a", "srv2", &["-x"])));
    }
}
