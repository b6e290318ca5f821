//! The `sandbox` block of a stdio server: what the kernel confines it to
//! (see `crate::sandbox` for how it is applied). A config may only narrow:
//! the block takes rights away from the server, never gives any, and only
//! the operator lifts it for one run (`--no-sandbox SERVER`).

use std::path::PathBuf;

use super::check::{Cursor, item_pos};
use super::rules::unknown_key;
use crate::jsonpos::{Kind as J, Node};

pub(super) const SANDBOX_KEYS: &[&str] =
    &["read", "write", "network", "connect", "bind", "best_effort"];

/// `network`: what the server may reach.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Network {
    /// An empty network namespace: no interface, no address (the default).
    #[default]
    None,
    /// A network namespace of its own with `lo` up: the server reaches
    /// only itself.
    Loopback,
    /// The user's network (narrowed by `connect`/`bind` when listed).
    Any,
}

impl Network {
    /// The word the config uses.
    pub fn name(self) -> &'static str {
        match self {
            Network::None => "none",
            Network::Loopback => "loopback",
            Network::Any => "any",
        }
    }
}

/// A validated `sandbox` block. Paths are templates as written (`${VAR}`
/// and a leading `~/` are expanded at launch, then resolved against
/// `base`, the config file's directory).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sandbox {
    /// Read and execute beneath these paths.
    pub read: Vec<String>,
    /// Read, write, create and remove beneath these paths.
    pub write: Vec<String>,
    pub network: Network,
    /// TCP ports the server may connect to (Landlock ABI 4); empty: any
    /// port the network allows.
    pub connect: Vec<u16>,
    /// TCP ports the server may bind (Landlock ABI 4); with `connect`
    /// listed and `bind` not, binding is denied.
    pub bind: Vec<u16>,
    /// Start with what the kernel enforces (warning once) instead of
    /// refusing when a feature the block needs is missing.
    pub best_effort: bool,
    /// The config file's directory.
    pub base: PathBuf,
}

impl Sandbox {
    /// The block as JSON: the fingerprint, `check-config --json` and the
    /// journal show the same thing.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "read": self.read,
            "write": self.write,
            "network": self.network.name(),
            "connect": self.connect,
            "bind": self.bind,
            "best_effort": self.best_effort,
        })
    }
}

impl Cursor<'_, '_> {
    /// Validates `sandbox`; paths that do not exist (with the variables
    /// set now) are warnings here and a refusal at launch.
    pub(super) fn sandbox(&mut self, node: &Node) -> Option<Sandbox> {
        let m = node.get("sandbox")?;
        let base = "/sandbox";
        let errors = self.errors();
        if !cfg!(target_os = "linux") {
            self.error(
                base,
                m.value.pos,
                "'sandbox' is supported on Linux only (Landlock and \
                 namespaces); remove it or run this server elsewhere",
            );
            return None;
        }
        let J::Object(fields) = &m.value.kind else {
            self.error(base, m.value.pos, "'sandbox' must be an object");
            return None;
        };
        for f in fields {
            if !SANDBOX_KEYS.contains(&f.key.as_str()) {
                let msg = unknown_key(
                    "unknown key",
                    " in 'sandbox'",
                    &f.key,
                    SANDBOX_KEYS,
                );
                self.error(base, f.key_pos, msg);
            }
        }
        let block = &m.value;
        let read = self.string_array(block, "read", base);
        let write = self.string_array(block, "write", base);
        for (key, list) in [("read", &read), ("write", &write)] {
            let Some(at) = block.get(key) else { continue };
            for (i, t) in list.iter().enumerate() {
                let p = format!("{base}/{key}/{i}");
                let pos = item_pos(&at.value, i);
                if t.is_empty() {
                    self.error(
                        &p,
                        pos,
                        format!("'{key}' paths may not be empty"),
                    );
                    continue;
                }
                match self.sandbox_path(t) {
                    Some(path) if !path.exists() => self.warn(
                        &p,
                        pos,
                        format!(
                            "'{}' does not exist; the server will not start \
                             until it does",
                            path.display()
                        ),
                    ),
                    _ => {}
                }
            }
        }
        let network = match block
            .get("network")
            .map(|f| (&f.value.kind, f.value.pos))
        {
            None => Network::None,
            Some((J::String(s), _)) if s == "none" => Network::None,
            Some((J::String(s), _)) if s == "loopback" => Network::Loopback,
            Some((J::String(s), _)) if s == "any" => Network::Any,
            Some((_, pos)) => {
                self.error(
                    &format!("{base}/network"),
                    pos,
                    "'network' must be \"none\", \"loopback\" or \"any\"",
                );
                Network::None
            }
        };
        let connect = self.ports(block, "connect");
        let bind = self.ports(block, "bind");
        let best_effort = match block
            .get("best_effort")
            .map(|f| (&f.value.kind, f.value.pos))
        {
            None => false,
            Some((J::Bool(b), _)) => *b,
            Some((_, pos)) => {
                self.error(
                    &format!("{base}/best_effort"),
                    pos,
                    "'best_effort' must be true or false",
                );
                false
            }
        };
        (self.errors() == errors).then(|| Sandbox {
            read,
            write,
            network,
            connect,
            bind,
            best_effort,
            base: self.dir().to_path_buf(),
        })
    }

    /// A list of TCP ports (1 to 65535).
    fn ports(&mut self, block: &Node, key: &str) -> Vec<u16> {
        let Some(m) = block.get(key) else { return vec![] };
        let p = format!("/sandbox/{key}");
        let J::Array(items) = &m.value.kind else {
            self.error(
                &p,
                m.value.pos,
                format!("'{key}' must be an array of port numbers"),
            );
            return vec![];
        };
        let mut out = vec![];
        for (i, it) in items.iter().enumerate() {
            match &it.kind {
                J::Number(n)
                    if n.as_u64()
                        .is_some_and(|v| (1..=65535).contains(&v)) =>
                {
                    out.push(n.as_u64().unwrap_or(0) as u16);
                }
                _ => self.error(
                    &format!("{p}/{i}"),
                    it.pos,
                    format!("'{key}' items must be TCP ports from 1 to 65535"),
                ),
            }
        }
        out
    }

    /// The path a template names now, if its variables are set.
    fn sandbox_path(&mut self, template: &str) -> Option<PathBuf> {
        let lookup = |n: &str| self.lookup(n);
        let text = crate::vars::expand(template, &lookup).ok()?;
        Some(resolve(&text, self.dir(), &lookup))
    }
}

/// A sandbox path after expansion: `~` or `~/…` is under `$HOME`, a
/// relative path under `base` (the config's directory).
pub fn resolve(
    text: &str,
    base: &std::path::Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> PathBuf {
    let home = || lookup("HOME").map(PathBuf::from);
    if text == "~"
        && let Some(h) = home()
    {
        return h;
    }
    if let Some(rest) = text.strip_prefix("~/")
        && let Some(h) = home()
    {
        return h.join(rest);
    }
    base.join(text.strip_prefix("./").unwrap_or(text))
}
