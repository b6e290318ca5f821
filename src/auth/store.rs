//! The credential file: where `login` keeps tokens.
//!
//! `RIVUMI_MCP_CREDENTIALS`, else `$XDG_CONFIG_HOME/rivumi-mcp/
//! credentials.json`, else `~/.config/rivumi-mcp/credentials.json`; the
//! directory is created 0700.
//!
//! Reading opens with `O_NOFOLLOW` and checks the open descriptor, not the
//! path: a regular file, owned by us, mode exactly 0600 (anything looser is
//! refused with a `chmod 600` hint, never silently fixed), one link, at
//! most 1 MiB. Writing takes an exclusive lock on a lock file beside it
//! (so concurrent logins do not lose each other's entries), re-reads the
//! file under the lock, writes a new temp file with a random name created
//! exclusively with mode 0600, fsyncs it, renames it over the target
//! (refusing a symlink there) and fsyncs the directory. A writer killed
//! at any point leaves the old file intact.
//!
//! The directory holding the file must be a real directory (not a
//! symbolic link) owned by us and not writable by group or others;
//! otherwise nothing is read or written.
//!
//! The file is read strictly: `version` 1 and exactly the fields this
//! version writes, each of its type. A file that is valid JSON but not
//! that shape (a newer version's, a hand edit, an entry it cannot parse)
//! is an error naming the file and where in it, and is never rewritten:
//! a rewrite would drop what this version cannot read.
//!
//! Entries are keyed by server name and bound to the canonical MCP URL and
//! the token endpoint: a token is only ever sent to the URL it was
//! obtained for. Each records the issuer (as its metadata published it)
//! that issued the token and, with a dynamic registration, where that
//! client was registered: client credentials belong to one authorization
//! server and are presented nowhere else (SEP-2352).

use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::pkce::Secret;
use crate::error::{Error, Result};
use crate::{sys, term};

const MAX_FILE: u64 = 1 << 20;
const LOCK_WAIT: Duration = Duration::from_secs(30);
/// The file format this version reads and writes.
const VERSION: u64 = 1;
/// The fields of an entry ([`Credential::to_json`]); an entry with any
/// other is from a newer version and is not rewritten without it.
const FIELDS: &[&str] = &[
    "url",
    "token_endpoint",
    "issuer",
    "client_id",
    "access_token",
    "refresh_token",
    "expires_at",
    "scope",
    "obtained_at",
    "registration",
    "other_registrations",
    "auth_method",
    "resource",
    "dpop_key",
];

/// One stored credential.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Credential {
    /// The canonical MCP server URL the token was obtained for.
    pub(crate) url: String,
    pub(crate) token_endpoint: String,
    pub(crate) issuer: Option<String>,
    pub(crate) client_id: String,
    pub(crate) access_token: Secret,
    pub(crate) refresh_token: Option<Secret>,
    /// Unix seconds.
    pub(crate) expires_at: Option<u64>,
    pub(crate) scope: Option<String>,
    pub(crate) obtained_at: u64,
    /// A dynamic registration stored with the credential (issue 7): the
    /// registration response, secrets included.
    pub(crate) registration: Option<Value>,
    /// Dynamic registrations made earlier at other authorization servers
    /// (each bound to where it was made), newest first, so that a server
    /// whose protected resource moves back to one of them reuses its own
    /// client there. Written only when there are any.
    pub(crate) other_registrations: Vec<Value>,
    /// How the client authenticated at the token endpoint (`none`,
    /// `client_secret_basic`, `client_secret_post`), for `login --refresh`.
    pub(crate) auth_method: Option<String>,
    /// The RFC 8707 `resource` the token was obtained for, as the
    /// protected resource published it, when that is not `url` (for
    /// `login --refresh`). Written only then, so that entries without it
    /// stay readable by versions that do not know the field.
    pub(crate) resource: Option<String>,
    /// The DPoP key the token is bound to (a P-256 PKCS#8 document,
    /// base64url; secret): the token is presented only with proofs made
    /// by it. Written only when there is one, like `resource`.
    pub(crate) dpop_key: Option<Secret>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("url", &self.url)
            .field("token_endpoint", &self.token_endpoint)
            .field("expires_at", &self.expires_at)
            .field("access_token", &self.access_token)
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .finish_non_exhaustive()
    }
}

impl Credential {
    fn to_json(&self) -> Value {
        let mut v = json!({
            "url": self.url,
            "token_endpoint": self.token_endpoint,
            "issuer": self.issuer,
            "client_id": self.client_id,
            "access_token": self.access_token.expose(),
            "refresh_token": self.refresh_token.as_ref().map(Secret::expose),
            "expires_at": self.expires_at,
            "scope": self.scope,
            "obtained_at": self.obtained_at,
            "registration": self.registration,
            "auth_method": self.auth_method,
        });
        if let Some(r) = &self.resource {
            v["resource"] = json!(r);
        }
        if !self.other_registrations.is_empty() {
            v["other_registrations"] = json!(self.other_registrations);
        }
        if let Some(k) = &self.dpop_key {
            v["dpop_key"] = json!(k.expose());
        }
        v
    }

    /// An entry as this version writes it; anything else is an error
    /// saying which field (the caller adds the file and the entry).
    fn from_json(v: &Value) -> std::result::Result<Credential, String> {
        let m = v.as_object().ok_or("not a JSON object")?;
        if let Some(k) = m.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(format!(
                "unknown field '{}'",
                term::clip(&term::line(k), 60)
            ));
        }
        let text = |k: &str| match m.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{k}: not a string")),
        };
        let needed = |k: &str| text(k)?.ok_or(format!("{k}: missing"));
        let number = |k: &str| match m.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_u64()
                .map(Some)
                .ok_or(format!("{k}: not a whole number of seconds")),
        };
        let registration = match m.get("registration") {
            None | Some(Value::Null) => None,
            Some(r @ Value::Object(_)) => Some(r.clone()),
            Some(_) => return Err("registration: not an object".into()),
        };
        let other_registrations = match m.get("other_registrations") {
            None | Some(Value::Null) => vec![],
            Some(Value::Array(a)) if a.iter().all(Value::is_object) => {
                a.clone()
            }
            Some(_) => {
                return Err(
                    "other_registrations: not an array of objects".into()
                );
            }
        };
        Ok(Credential {
            other_registrations,
            url: needed("url")?,
            token_endpoint: needed("token_endpoint")?,
            issuer: text("issuer")?,
            client_id: needed("client_id")?,
            access_token: Secret::new(needed("access_token")?),
            refresh_token: text("refresh_token")?.map(Secret::new),
            expires_at: number("expires_at")?,
            scope: text("scope")?,
            obtained_at: number("obtained_at")?.unwrap_or(0),
            auth_method: text("auth_method")?,
            resource: text("resource")?,
            dpop_key: text("dpop_key")?.map(Secret::new),
            registration,
        })
    }

    /// Whether the token has expired at `now` (unix seconds).
    pub(crate) fn expired(&self, now: u64) -> bool {
        self.expires_at.is_some_and(|t| t <= now)
    }
}

/// The seconds since the epoch.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Where the file lives, from the environment.
pub(crate) fn path(
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf> {
    if let Some(p) = lookup("RIVUMI_MCP_CREDENTIALS").filter(|p| !p.is_empty())
    {
        return Ok(PathBuf::from(p));
    }
    let base = match lookup("XDG_CONFIG_HOME").filter(|p| p.starts_with('/')) {
        Some(x) => PathBuf::from(x),
        None => {
            let home = lookup("HOME").filter(|h| !h.is_empty()).ok_or_else(|| {
                Error::usage(
                    "cannot place the credential file: HOME is not set (set \
                     RIVUMI_MCP_CREDENTIALS)",
                )
            })?;
            PathBuf::from(home).join(".config")
        }
    };
    Ok(base.join("rivumi-mcp").join("credentials.json"))
}

/// All entries, by server name. A missing file is an empty store.
pub(crate) fn load(path: &Path) -> Result<Vec<(String, Credential)>> {
    let shown = path.display();
    check_dir(dir_of(path))?;
    let mode = |m: u32| {
        (m != 0o600).then(|| {
            format!(
                "has mode {m:03o}; it must be 0600 (run: chmod 600 {shown})"
            )
        })
    };
    let Some(bytes) = read_private(path, "credential file", MAX_FILE, &mode)?
    else {
        return Ok(vec![]);
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::refused(format!("credential file {shown}: {e}"))
    })?;
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        Error::refused(format!(
            "credential file {shown} is not valid JSON: {e}"
        ))
    })?;
    entries(&v).map_err(|at| {
        Error::refused(format!(
            "credential file {shown}: {at}; this version of rivumi-mcp does \
             not understand it, so the file is left as it is and nothing is \
             written"
        ))
    })
}

/// Reads a file that holds secrets (the credential file, a private key)
/// by the rules in the module docs: opened with `O_NOFOLLOW` (a symbolic
/// link is refused), then the open descriptor checked: a regular file,
/// ours, with one link, at most `max` bytes, and a mode `mode` accepts
/// (it says what is wrong otherwise). `None` when the file does not
/// exist. `what` names the file in errors ("credential file").
pub(crate) fn read_private(
    path: &Path,
    what: &str,
    max: u64,
    mode: &dyn Fn(u32) -> Option<String>,
) -> Result<Option<Vec<u8>>> {
    let shown = path.display();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let mut file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None);
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(Error::refused(format!(
                "{what} {shown} is a symbolic link; refusing it"
            )));
        }
        Err(e) => {
            return Err(Error::refused(format!(
                "{what} {shown}: cannot open: {e}"
            )));
        }
    };
    let meta = file
        .metadata()
        .map_err(|e| Error::refused(format!("{what} {shown}: {e}")))?;
    let problem = if !meta.is_file() {
        Some("is not a regular file".to_string())
    } else if meta.uid() != sys::euid() {
        Some(format!("belongs to uid {}, not to you", meta.uid()))
    } else if let Some(p) = mode(meta.mode() & 0o777) {
        Some(p)
    } else if meta.nlink() != 1 {
        Some(format!("has {} hard links; it must have one", meta.nlink()))
    } else if meta.len() > max {
        Some(format!("is larger than {max} bytes"))
    } else {
        None
    };
    if let Some(p) = problem {
        return Err(Error::refused(format!("{what} {shown} {p}")));
    }
    let mut bytes = Vec::new();
    Read::by_ref(&mut file)
        .take(max)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::refused(format!("{what} {shown}: {e}")))?;
    Ok(Some(bytes))
}

/// The entries of a parsed file, or where it is not a file of
/// [`VERSION`]: nothing is skipped, so that a rewrite never drops what
/// this version cannot read.
fn entries(
    v: &Value,
) -> std::result::Result<Vec<(String, Credential)>, String> {
    let top = v.as_object().ok_or("the top level is not a JSON object")?;
    if let Some(k) =
        top.keys().find(|k| !["version", "servers"].contains(&k.as_str()))
    {
        return Err(format!(
            "unknown top-level field '{}'",
            term::clip(&term::line(k), 60)
        ));
    }
    match top.get("version") {
        Some(n) if n.as_u64() == Some(VERSION) => {}
        Some(n) if n.is_u64() => {
            return Err(format!("version {n}, not {VERSION}"));
        }
        Some(_) => return Err(format!("version: not {VERSION}")),
        None => return Err("no version".into()),
    }
    let servers = match top.get("servers") {
        Some(Value::Object(m)) => m,
        Some(_) => return Err("servers: not an object".into()),
        None => return Err("no servers".into()),
    };
    servers
        .iter()
        .map(|(k, v)| {
            Credential::from_json(v).map(|c| (k.clone(), c)).map_err(|e| {
                format!("entry '{}': {e}", term::clip(&term::line(k), 60))
            })
        })
        .collect()
}

/// Refuses a directory for the credential file that another user could
/// change: it must be a real directory (not a symbolic link), owned by us,
/// and not writable by group or others. A missing one is fine (it is
/// created 0700 on the first write).
pub(crate) fn check_dir(dir: &Path) -> Result<()> {
    let shown = dir.display();
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Error::refused(format!(
                "credential directory {shown}: {e}"
            )));
        }
    };
    let problem = if meta.file_type().is_symlink() {
        "is a symbolic link; refusing it".to_string()
    } else if !meta.is_dir() {
        "is not a directory".to_string()
    } else if meta.uid() != sys::euid() {
        format!("belongs to uid {}, not to you", meta.uid())
    } else if meta.mode() & 0o022 != 0 {
        format!(
            "has mode {:03o}: others can replace the credential file \
             (run: chmod go-w {shown})",
            meta.mode() & 0o777
        )
    } else {
        return Ok(());
    };
    Err(Error::refused(format!("credential directory {shown} {problem}")))
}

/// The directory of the credential file (`.` for a bare file name).
fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The entry of one server.
pub(crate) fn get(path: &Path, server: &str) -> Result<Option<Credential>> {
    Ok(load(path)?.into_iter().find(|(k, _)| k == server).map(|(_, c)| c))
}

/// Applies `change` to the entries under the lock, then replaces the file
/// atomically. `change` sees the file as it is now, not as it was when the
/// caller read it; it may do I/O (a refresh) while the lock is held, and
/// nothing is written when it fails.
pub(crate) fn transact<T>(
    path: &Path,
    change: impl FnOnce(&mut Vec<(String, Credential)>) -> Result<T>,
) -> Result<T> {
    transact_if(path, |e| change(e).map(|t| (t, true)))
}

/// [`transact`] for a change that may find nothing to do: the file is
/// replaced only when `change` says so (`(_, true)`); else it is left as
/// it is, byte for byte, and the lock released.
pub(crate) fn transact_if<T>(
    path: &Path,
    change: impl FnOnce(&mut Vec<(String, Credential)>) -> Result<(T, bool)>,
) -> Result<T> {
    let shown = path.display();
    let fail = |what: &str, e: std::io::Error| {
        Error::refused(format!("credential file {shown}: {what}: {e}"))
    };
    let dir = dir_of(path);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| fail("cannot create its directory", e))?;
    check_dir(dir)?;
    let lock_path = path.with_extension("json.lock");
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&lock_path)
        .map_err(|e| fail("cannot open the lock file", e))?;
    sys::lock_exclusive(&lock, LOCK_WAIT).map_err(|e| fail("lock", e))?;
    let mut entries = load(path)?;
    let (out, write) = change(&mut entries)?;
    if !write {
        drop(lock);
        return Ok(out);
    }
    let mut servers = Map::new();
    for (k, c) in &entries {
        servers.insert(k.clone(), c.to_json());
    }
    let mut bytes = serde_json::to_vec_pretty(
        &json!({"version": VERSION, "servers": servers}),
    )
    .map_err(|e| Error::server(format!("cannot encode credentials: {e}")))?;
    bytes.push(b'\n');
    crate::files::replace_atomically(
        dir,
        path,
        &bytes,
        0o600,
        &format!("credential file {shown}"),
    )?;
    drop(lock);
    Ok(out)
}

/// [`transact`] for a change that cannot fail.
pub(crate) fn update(
    path: &Path,
    change: impl FnOnce(&mut Vec<(String, Credential)>),
) -> Result<()> {
    transact(path, |e| {
        change(e);
        Ok(())
    })
}

/// Stores (or replaces) one server's entry.
pub(crate) fn put(path: &Path, server: &str, c: Credential) -> Result<()> {
    update(path, |entries| {
        entries.retain(|(k, _)| k != server);
        entries.push((server.to_string(), c));
    })
}

/// Removes one server's entry; whether there was one.
pub(crate) fn remove(path: &Path, server: &str) -> Result<bool> {
    let mut found = false;
    update(path, |entries| {
        let before = entries.len();
        entries.retain(|(k, _)| k != server);
        found = entries.len() != before;
    })?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cred(token: &str) -> Credential {
        Credential {
            url: "https://mcp.example.com/mcp".into(),
            token_endpoint: "https://as.example.com/token".into(),
            issuer: None,
            client_id: "c".into(),
            access_token: Secret::new(token.into()),
            refresh_token: Some(Secret::new("r-secret".into())),
            expires_at: Some(10),
            scope: None,
            obtained_at: 1,
            registration: None,
            other_registrations: vec![],
            auth_method: None,
            resource: None,
            dpop_key: None,
        }
    }

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir()
            .join(format!("rivumi-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn round_trip_and_mode() {
        let d = tmpdir("rt");
        let p = d.join("sub").join("credentials.json");
        put(&p, "a", cred("t1")).unwrap();
        put(&p, "b", cred("t2")).unwrap();
        assert_eq!(get(&p, "a").unwrap().unwrap(), cred("t1"));
        let meta = std::fs::metadata(&p).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        assert_eq!(
            std::fs::metadata(p.parent().unwrap()).unwrap().mode() & 0o777,
            0o700
        );
        assert!(remove(&p, "a").unwrap());
        assert!(!remove(&p, "a").unwrap());
        assert!(get(&p, "b").unwrap().is_some());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_resource_is_written_only_when_it_is_not_the_url() {
        let plain = cred("t");
        assert!(plain.to_json().get("resource").is_none());
        let mut other = cred("t");
        other.resource = Some("https://mcp.example.com".into());
        let v = other.to_json();
        assert_eq!(v["resource"], json!("https://mcp.example.com"));
        assert_eq!(Credential::from_json(&v).unwrap(), other);
    }

    #[test]
    fn debug_never_shows_tokens() {
        let s = format!("{:?}", cred("super-secret-token"));
        assert!(
            !s.contains("super-secret-token") && !s.contains("r-secret"),
            "{s}"
        );
    }
}
