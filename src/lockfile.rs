//! The lock file (`.mcp.lock.json`): what servers told the model, pinned.
//!
//! The allowlist fingerprint pins what rivumi-mcp launches; this pins what
//! the server then exposes: its `serverInfo`, protocol and `instructions`,
//! and every tool, prompt, resource and resource template definition as
//! sent on the wire. A silent change there (a "rug pull": a reworded
//! description, a `write` tool that starts calling itself read-only) is
//! drift: `lock --check` reports it and the executor refuses to use a
//! drifted item.
//!
//! The file is canonical JSON: object keys sorted by UTF-16 code units
//! (RFC 8785), integral floats written as integers, two-space indentation
//! so that a pull request shows the changed line. Items are keyed by
//! their name (URI, URI template), so the order or paging a server uses is
//! not contract. Each item carries the SHA-256 of its canonical compact
//! form, checked when the file is read: a hand edit of a definition that
//! forgets its hash is an error, not a new contract.
//!
//! Reading is strict (exactly the fields this version writes, each of its
//! type, no duplicate keys) and fails closed: a file that cannot be read
//! is an error naming its line and column, never "no lock". Writing is
//! atomic (a temporary file beside it, fsynced, renamed over it). Apart
//! from [`load`] and [`save`], this module is pure.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{Map, Number, Value, json};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::jsonpos::{self, Node, Pos};

/// The file's name, beside the config file unless `--lock` says otherwise.
pub(crate) const FILE_NAME: &str = ".mcp.lock.json";
/// The format version this program reads and writes.
pub(crate) const VERSION: u64 = 1;
/// Context kept on each side of a changed span in a report.
const CONTEXT: usize = 24;
/// The most bytes of a changed span shown in a report.
const SPAN: usize = 160;

/// What kind of item a definition is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ItemKind {
    Tool,
    Prompt,
    Resource,
    Template,
    /// A skill entry (SEP-2640): its frontmatter and its files' digests.
    /// Written only for a server that lists skills, so that lock files
    /// without skills stay as they were.
    Skill,
}

impl ItemKind {
    pub(crate) const ALL: [ItemKind; 4] = [
        ItemKind::Tool,
        ItemKind::Prompt,
        ItemKind::Resource,
        ItemKind::Template,
    ];

    /// The member of a server's entry holding these items.
    pub(crate) fn key(self) -> &'static str {
        match self {
            ItemKind::Tool => "tools",
            ItemKind::Prompt => "prompts",
            ItemKind::Resource => "resources",
            ItemKind::Template => "resourceTemplates",
            ItemKind::Skill => "skills",
        }
    }

    /// The field of a definition that identifies it.
    fn id_field(self) -> &'static str {
        match self {
            ItemKind::Tool | ItemKind::Prompt => "name",
            ItemKind::Resource | ItemKind::Skill => "uri",
            ItemKind::Template => "uriTemplate",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            ItemKind::Tool => "tool",
            ItemKind::Prompt => "prompt",
            ItemKind::Resource => "resource",
            ItemKind::Template => "resource template",
            ItemKind::Skill => "skill",
        }
    }
}

/// What one server exposes, as locked or as seen now.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Snapshot {
    /// The launch fingerprint (see `allowlist::fingerprint`).
    pub(crate) launch: String,
    pub(crate) protocol: String,
    pub(crate) server_info: Value,
    pub(crate) instructions: Option<String>,
    pub(crate) items: BTreeMap<(ItemKind, String), Value>,
}

impl Snapshot {
    /// Adds what a server listed. Items without a string id cannot be
    /// used and are skipped; of two with the same id the one whose
    /// canonical form sorts first is kept, so the result does not depend
    /// on the order they were listed in.
    pub(crate) fn add_items(&mut self, kind: ItemKind, items: &[Value]) {
        for def in items {
            let Some(id) = def.get(kind.id_field()).and_then(Value::as_str)
            else {
                continue;
            };
            let key = (kind, id.to_string());
            let keep = match self.items.get(&key) {
                Some(prev) => canonical(def) < canonical(prev),
                None => true,
            };
            if keep {
                self.items.insert(key, def.clone());
            }
        }
    }

    /// The server-level fields, by the names the file uses.
    fn header(&self) -> [(&'static str, Value); 4] {
        [
            ("launch", json!(self.launch)),
            ("protocol", json!(self.protocol)),
            ("serverInfo", self.server_info.clone()),
            ("instructions", json!(self.instructions)),
        ]
    }

    /// The number of items.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }
}

/// The ids that `items` lists more than once with different definitions,
/// in the order first seen. A server that lists one name twice, one way
/// and another, leaves open which of them a call reaches: such an item is
/// neither locked nor called. The same definition listed twice is only
/// repetition and is not reported.
pub(crate) fn conflicts(kind: ItemKind, items: &[Value]) -> Vec<String> {
    let mut seen: HashMap<&str, String> = HashMap::new();
    let mut out: Vec<String> = vec![];
    for def in items {
        let Some(id) = def.get(kind.id_field()).and_then(Value::as_str) else {
            continue;
        };
        let form = canonical(def);
        match seen.get(id) {
            Some(first) if *first != form => {
                if !out.iter().any(|o| o == id) {
                    out.push(id.to_string());
                }
            }
            Some(_) => {}
            None => {
                seen.insert(id, form);
            }
        }
    }
    out
}

/// A lock file: the servers it pins, and where each entry is in the file
/// it was read from (for reports that point at lines).
#[derive(Debug, Clone, Default)]
pub(crate) struct Lock {
    pub(crate) path: PathBuf,
    pub(crate) servers: BTreeMap<String, Snapshot>,
    /// JSON pointer of a server or item entry → where it starts.
    positions: HashMap<String, Pos>,
}

impl Lock {
    pub(crate) fn new(path: &Path) -> Lock {
        Lock { path: path.to_path_buf(), ..Lock::default() }
    }

    /// Where the entry at `pointer` (or its closest parent) starts in the
    /// file read; 1:1 when the lock was not read from a file.
    pub(crate) fn position(&self, pointer: &str) -> Pos {
        let mut p = pointer;
        loop {
            if let Some(pos) = self.positions.get(p) {
                return *pos;
            }
            match p.rfind('/') {
                Some(i) => p = &p[..i],
                None => return Pos { line: 1, col: 1 },
            }
        }
    }

    /// The file's contents: canonical, indented, with a final newline.
    pub(crate) fn render(&self) -> String {
        let mut servers = Map::new();
        for (name, s) in &self.servers {
            let mut entry: Map<String, Value> = s
                .header()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            let skills = s.items.keys().any(|(k, _)| *k == ItemKind::Skill);
            let kinds =
                ItemKind::ALL.iter().chain(skills.then_some(&ItemKind::Skill));
            for &kind in kinds {
                let mut items = Map::new();
                for ((k, id), def) in &s.items {
                    if *k == kind {
                        items.insert(
                            id.clone(),
                            json!({"sha256": digest(def), "definition": def}),
                        );
                    }
                }
                entry.insert(kind.key().to_string(), Value::Object(items));
            }
            servers.insert(name.clone(), Value::Object(entry));
        }
        let doc = json!({"lockfileVersion": VERSION, "servers": servers});
        let mut out = String::new();
        write_value(&mut out, &doc, Some(0));
        out.push('\n');
        out
    }

    /// Refuses a server the lock has no entry for.
    pub(crate) fn check_server(
        &self,
        server: &str,
    ) -> std::result::Result<(), String> {
        if self.servers.contains_key(server) {
            return Ok(());
        }
        Err(format!(
            "server is not in the lock file {}{}",
            self.path.display(),
            hint(server)
        ))
    }

    /// Why `live`, the definition a command is about to use, may not be
    /// used; `Ok` when the lock pins exactly it. `id` names the item.
    pub(crate) fn check_item(
        &self,
        server: &str,
        kind: ItemKind,
        id: &str,
        live: Option<&Value>,
    ) -> std::result::Result<(), String> {
        self.check_server(server)?;
        let shown = self.path.display();
        let hint = hint(server);
        let what = format!("{} '{}'", kind.label(), crate::term::line(id));
        let locked = self
            .servers
            .get(server)
            .and_then(|s| s.items.get(&(kind, id.to_string())));
        match (locked, live) {
            (Some(old), Some(new)) if digest(old) == digest(new) => Ok(()),
            (Some(old), Some(new)) => {
                let (fields, _) = field_diffs(old, new);
                Err(format!(
                    "{what} changed since {shown} was written ({}){hint}",
                    fields.join(", ")
                ))
            }
            (Some(_), None) => Err(format!(
                "{what} is in {shown} but the server no longer lists it{hint}"
            )),
            (None, _) => Err(format!("{what} is not in {shown}{hint}")),
        }
    }

    /// How an item a server lists now stands against the lock, for
    /// `list`: `None` when pinned exactly, else `changed` or `not locked`.
    pub(crate) fn drift(
        &self,
        server: &str,
        kind: ItemKind,
        live: &Value,
    ) -> Option<&'static str> {
        let id = live.get(kind.id_field()).and_then(Value::as_str)?;
        let locked = self
            .servers
            .get(server)
            .and_then(|s| s.items.get(&(kind, id.to_string())));
        match locked {
            None => Some("not locked"),
            Some(old) if digest(old) != digest(live) => Some("changed"),
            Some(_) => None,
        }
    }

    /// The locked definitions of one kind of a server.
    pub(crate) fn locked(&self, server: &str, kind: ItemKind) -> Vec<Value> {
        self.servers
            .get(server)
            .map(|s| {
                s.items
                    .iter()
                    .filter(|((k, _), _)| *k == kind)
                    .map(|(_, d)| d.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// What to do about a refusal.
fn hint(server: &str) -> String {
    format!(
        "; review with 'rivumi-mcp lock --check {server}', then run \
         'rivumi-mcp lock {server}' (or pass --unlocked)"
    )
}

// ---- canonical JSON -------------------------------------------------------

/// The canonical compact form (RFC 8785 ordering): what hashes are over.
pub(crate) fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, None);
    out
}

/// SHA-256 of the canonical compact form, in hex.
pub(crate) fn digest(v: &Value) -> String {
    crate::files::hex(&Sha256::digest(canonical(v).as_bytes()))
}

/// Writes `v` with keys in UTF-16 order; `indent` is the depth when
/// indenting (two spaces a level), `None` for the compact form.
fn write_value(out: &mut String, v: &Value, indent: Option<usize>) {
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    };
    let inner = indent.map(|d| d + 1);
    match v {
        Value::Null | Value::Bool(_) => out.push_str(&v.to_string()),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => out.push_str(&Value::from(s.as_str()).to_string()),
        Value::Array(a) if a.is_empty() => out.push_str("[]"),
        Value::Object(m) if m.is_empty() => out.push_str("{}"),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if let Some(d) = inner {
                    newline(out, d);
                }
                write_value(out, x, inner);
            }
            if let Some(d) = indent {
                newline(out, d);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if let Some(d) = inner {
                    newline(out, d);
                }
                out.push_str(&Value::from(k.as_str()).to_string());
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write_value(out, &m[k], inner);
            }
            if let Some(d) = indent {
                newline(out, d);
            }
            out.push('}');
        }
    }
}

/// A number as ECMAScript prints it where that is simple: an integral
/// float is an integer (`1.0` is `1`); other floats as serde_json does.
fn number(n: &Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.007e15 => {
            format!("{}", f as i64)
        }
        _ => n.to_string(),
    }
}

// ---- reading and writing --------------------------------------------------

/// Reads the lock file at `path`: `None` when there is none; an error
/// (refused, exit 3) naming the line and column when it is not a lock
/// file this version wrote.
pub(crate) fn load(path: &Path) -> Result<Option<Lock>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    let text = crate::config::read_file(path)
        .map_err(|e| Error::refused(format!("lock file {}", e.message())))?;
    parse(path, &text).map(Some).map_err(|m| {
        Error::refused(format!(
            "lock file {}:{m}; fix it or delete it and run 'rivumi-mcp lock'",
            path.display()
        ))
    })
}

/// Parses a lock file's text; the error is `line:col: message`.
pub(crate) fn parse(
    path: &Path,
    text: &str,
) -> std::result::Result<Lock, String> {
    let doc = jsonpos::parse(text).map_err(|e| e.to_string())?;
    if let Some(d) = doc.duplicates.first() {
        return Err(format!("{}: duplicate key ({})", d.pos, d.pointer));
    }
    let mut lock = Lock::new(path);
    let root = members(&doc.root, &["lockfileVersion", "servers"], "")?;
    let version = &root["lockfileVersion"].value;
    if !matches!(&version.kind,
        jsonpos::Kind::Number(n) if n.as_u64() == Some(VERSION))
    {
        return Err(format!(
            "{}: lockfileVersion must be {VERSION} (this rivumi-mcp reads \
             version {VERSION} only)",
            version.pos
        ));
    }
    let servers = object(&root["servers"].value, "/servers")?;
    for m in servers {
        let ptr = format!("/servers/{}", jsonpos::pointer_escape(&m.key));
        lock.positions.insert(ptr.clone(), m.key_pos);
        let s = read_server(&m.value, &ptr, &mut lock.positions)?;
        lock.servers.insert(m.key.clone(), s);
    }
    Ok(lock)
}

/// The members of an object node that must have exactly `keys`.
fn members<'a>(
    node: &'a Node,
    keys: &[&str],
    ptr: &str,
) -> std::result::Result<HashMap<String, &'a jsonpos::Member>, String> {
    let mut found = HashMap::new();
    for m in object(node, ptr)? {
        if !keys.contains(&m.key.as_str()) {
            return Err(format!(
                "{}: unknown field '{}' in {}",
                m.key_pos,
                crate::term::line(&m.key),
                if ptr.is_empty() { "the file" } else { ptr }
            ));
        }
        found.insert(m.key.clone(), m);
    }
    if let Some(k) = keys.iter().find(|k| !found.contains_key(**k)) {
        return Err(format!(
            "{}: missing field '{k}' in {}",
            node.pos,
            if ptr.is_empty() { "the file" } else { ptr }
        ));
    }
    Ok(found)
}

fn object<'a>(
    node: &'a Node,
    ptr: &str,
) -> std::result::Result<&'a [jsonpos::Member], String> {
    match &node.kind {
        jsonpos::Kind::Object(m) => Ok(m),
        _ => Err(format!(
            "{}: {} must be an object, not {}",
            node.pos,
            if ptr.is_empty() { "the file" } else { ptr },
            node.type_name()
        )),
    }
}

fn string(node: &Node, ptr: &str) -> std::result::Result<String, String> {
    match &node.kind {
        jsonpos::Kind::String(s) => Ok(s.clone()),
        _ => Err(format!(
            "{}: {ptr} must be a string, not {}",
            node.pos,
            node.type_name()
        )),
    }
}

fn read_server(
    node: &Node,
    ptr: &str,
    positions: &mut HashMap<String, Pos>,
) -> std::result::Result<Snapshot, String> {
    let mut keys = vec!["launch", "protocol", "serverInfo", "instructions"];
    keys.extend(ItemKind::ALL.map(ItemKind::key));
    // Skills are there only for a server that lists some.
    let skills =
        object(node, ptr)?.iter().any(|m| m.key == ItemKind::Skill.key());
    if skills {
        keys.push(ItemKind::Skill.key());
    }
    let m = members(node, &keys, ptr)?;
    let instructions = &m["instructions"].value;
    let mut s = Snapshot {
        launch: string(&m["launch"].value, &format!("{ptr}/launch"))?,
        protocol: string(&m["protocol"].value, &format!("{ptr}/protocol"))?,
        server_info: m["serverInfo"].value.to_value(),
        instructions: match instructions.kind {
            jsonpos::Kind::Null => None,
            _ => Some(string(instructions, &format!("{ptr}/instructions"))?),
        },
        items: BTreeMap::new(),
    };
    for &kind in ItemKind::ALL.iter().chain(skills.then_some(&ItemKind::Skill))
    {
        let kptr = format!("{ptr}/{}", kind.key());
        positions.insert(kptr.clone(), m[kind.key()].key_pos);
        for item in object(&m[kind.key()].value, &kptr)? {
            let iptr =
                format!("{kptr}/{}", jsonpos::pointer_escape(&item.key));
            positions.insert(iptr.clone(), item.key_pos);
            let f = members(&item.value, &["sha256", "definition"], &iptr)?;
            let def_node = &f["definition"].value;
            object(def_node, &format!("{iptr}/definition"))?;
            let def = def_node.to_value();
            if def.get(kind.id_field()).and_then(Value::as_str)
                != Some(item.key.as_str())
            {
                return Err(format!(
                    "{}: the definition's '{}' is not '{}'",
                    def_node.pos,
                    kind.id_field(),
                    crate::term::line(&item.key)
                ));
            }
            let sha = string(&f["sha256"].value, &format!("{iptr}/sha256"))?;
            if sha != digest(&def) {
                return Err(format!(
                    "{}: sha256 does not match the definition of {} '{}' \
                     (was the definition edited by hand?)",
                    f["sha256"].value.pos,
                    kind.label(),
                    crate::term::line(&item.key)
                ));
            }
            s.items.insert((kind, item.key.clone()), def);
        }
    }
    Ok(s)
}

/// Writes the lock file atomically ([`crate::files::replace_atomically`]:
/// a new temporary file beside it, fsynced, renamed over it, never
/// through a symbolic link, the directory fsynced). A writer killed at any
/// point leaves the old file.
pub(crate) fn save(lock: &Lock) -> Result<()> {
    let path = &lock.path;
    let shown = path.display();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // Never write what [`load`] would refuse: too big a file, or a
    // definition nested too deep for the strict reader once wrapped.
    let text = lock.render();
    if text.len() as u64 > crate::config::MAX_FILE {
        return Err(Error::refused(format!(
            "lock file {shown} would be {} bytes; the most this version \
             reads is {}",
            text.len(),
            crate::config::MAX_FILE
        )));
    }
    parse(path, &text).map_err(|m| {
        Error::refused(format!(
            "lock file {shown}: what the servers sent cannot be locked \
             ({m})"
        ))
    })?;
    crate::files::replace_atomically(
        dir,
        path,
        text.as_bytes(),
        0o644,
        &format!("lock file {shown}"),
    )
}

// ---- drift ------------------------------------------------------------------

/// What happened to a server or an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// Exposed now, not in the lock.
    Added,
    /// In the lock, not exposed now.
    Removed,
    Changed,
}

impl Change {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Changed => "changed",
        }
    }
}

/// A changed field, shortened to the span that differs (with a little
/// context) so that a 1 MiB description makes a short report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Diff {
    pub(crate) field: String,
    /// The locked text; `None` when the field was absent.
    pub(crate) old: Option<String>,
    pub(crate) new: Option<String>,
}

/// One difference between the lock and what a server exposes now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Finding {
    pub(crate) server: String,
    /// `None`: the server itself (its launch fingerprint, protocol,
    /// serverInfo or instructions; or the whole server added or removed).
    pub(crate) item: Option<(ItemKind, String)>,
    pub(crate) change: Change,
    /// The fields that differ (changes only), in order.
    pub(crate) fields: Vec<String>,
    pub(crate) diffs: Vec<Diff>,
}

impl Finding {
    /// "tool 'echo'", or "server" for the server's own fields.
    pub(crate) fn subject(&self) -> String {
        match &self.item {
            Some((k, id)) => format!("{} '{id}'", k.label()),
            None => "server".to_string(),
        }
    }

    /// The entry of the lock file this is about (its parent when the
    /// entry is not there).
    pub(crate) fn pointer(&self) -> String {
        let s = format!("/servers/{}", jsonpos::pointer_escape(&self.server));
        match (&self.item, self.change) {
            (None, Change::Added) => "/servers".to_string(),
            (None, _) => s,
            (Some((k, _)), Change::Added) => format!("{s}/{}", k.key()),
            (Some((k, id)), _) => {
                format!("{s}/{}/{}", k.key(), jsonpos::pointer_escape(id))
            }
        }
    }

    /// The one-line summary: "server 'demo': tool 'echo' changed:
    /// description".
    pub(crate) fn summary(&self) -> String {
        let server = format!("server '{}'", self.server);
        let fields = self.fields.join(", ");
        match (&self.item, self.change) {
            (None, Change::Added) => {
                format!("{server} is not in the lock file")
            }
            (None, Change::Removed) => format!(
                "{server} is in the lock file but was not started (no \
                 longer configured or allowed?)"
            ),
            (None, Change::Changed) => format!("{server} changed: {fields}"),
            (Some(_), change) => {
                let mut s =
                    format!("{server}: {} {}", self.subject(), change.label());
                if change == Change::Changed {
                    s.push_str(&format!(": {fields}"));
                }
                s
            }
        }
    }
}

/// The findings for one server between its locked and its live snapshot.
pub(crate) fn compare(
    server: &str,
    old: Option<&Snapshot>,
    new: Option<&Snapshot>,
) -> Vec<Finding> {
    let finding = |item, change, fields, diffs| Finding {
        server: server.to_string(),
        item,
        change,
        fields,
        diffs,
    };
    let (old, new) = match (old, new) {
        (None, None) => return vec![],
        (None, Some(_)) => {
            return vec![finding(None, Change::Added, vec![], vec![])];
        }
        (Some(_), None) => {
            return vec![finding(None, Change::Removed, vec![], vec![])];
        }
        (Some(o), Some(n)) => (o, n),
    };
    let mut out = vec![];
    let (mut fields, mut diffs) = (vec![], vec![]);
    for ((k, a), (_, b)) in old.header().iter().zip(new.header().iter()) {
        if canonical(a) != canonical(b) {
            fields.push(k.to_string());
            diffs.push(excerpt(k, Some(a), Some(b)));
        }
    }
    if !fields.is_empty() {
        out.push(finding(None, Change::Changed, fields, diffs));
    }
    let keys: BTreeSet<&(ItemKind, String)> =
        old.items.keys().chain(new.items.keys()).collect();
    for key in keys {
        let item = Some(key.clone());
        match (old.items.get(key), new.items.get(key)) {
            (Some(a), Some(b)) if digest(a) != digest(b) => {
                let (fields, diffs) = field_diffs(a, b);
                out.push(finding(item, Change::Changed, fields, diffs));
            }
            (Some(_), None) => {
                out.push(finding(item, Change::Removed, vec![], vec![]))
            }
            (None, Some(_)) => {
                out.push(finding(item, Change::Added, vec![], vec![]))
            }
            _ => {}
        }
    }
    out
}

/// The top-level fields of two definitions that differ, and their diffs.
fn field_diffs(old: &Value, new: &Value) -> (Vec<String>, Vec<Diff>) {
    let empty = Map::new();
    let o = old.as_object().unwrap_or(&empty);
    let n = new.as_object().unwrap_or(&empty);
    let keys: BTreeSet<&String> = o.keys().chain(n.keys()).collect();
    let mut fields = vec![];
    let mut diffs = vec![];
    for k in keys {
        let (a, b) = (o.get(k), n.get(k));
        if a.map(canonical) != b.map(canonical) {
            fields.push(k.clone());
            diffs.push(excerpt(k, a, b));
        }
    }
    (fields, diffs)
}

/// The differing span of two values (strings as text, anything else as
/// canonical JSON), with [`CONTEXT`] characters around it, each side cut
/// to [`SPAN`] bytes.
fn excerpt(field: &str, old: Option<&Value>, new: Option<&Value>) -> Diff {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        v => canonical(v),
    };
    let (a, b) = (old.map(text), new.map(text));
    let (Some(a), Some(b)) = (&a, &b) else {
        let cut = |s: Option<String>| {
            s.map(|s| crate::term::clip(&s, SPAN).into_owned())
        };
        return Diff { field: field.to_string(), old: cut(a), new: cut(b) };
    };
    let ac: Vec<char> = a.chars().collect();
    let bc: Vec<char> = b.chars().collect();
    let pre = ac.iter().zip(&bc).take_while(|(x, y)| x == y).count();
    let room = ac.len().min(bc.len()) - pre;
    let suf = ac
        .iter()
        .rev()
        .zip(bc.iter().rev())
        .take(room)
        .take_while(|(x, y)| x == y)
        .count();
    let side = |c: &[char]| {
        let start = pre.saturating_sub(CONTEXT);
        let end = (c.len() - suf + CONTEXT).min(c.len());
        let mid: String = c[pre..c.len() - suf].iter().collect();
        let before: String = c[start..pre].iter().collect();
        let after: String = c[c.len() - suf..end].iter().collect();
        format!(
            "{}{before}{}{after}{}",
            if start > 0 { "…" } else { "" },
            crate::term::clip(&mid, SPAN),
            if end < c.len() { "…" } else { "" }
        )
    };
    Diff {
        field: field.to_string(),
        old: Some(side(&ac)),
        new: Some(side(&bc)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(tools: &[Value]) -> Snapshot {
        let mut s = Snapshot {
            launch: "0123456789abcdef0123".into(),
            protocol: "2025-11-25".into(),
            server_info: json!({"name": "x", "version": "1"}),
            instructions: Some("use me".into()),
            items: BTreeMap::new(),
        };
        s.add_items(ItemKind::Tool, tools);
        s
    }

    fn lock_of(s: Snapshot) -> Lock {
        let mut l = Lock::new(Path::new(FILE_NAME));
        l.servers.insert("demo".into(), s);
        l
    }

    #[test]
    fn a_name_listed_twice_differently_is_a_conflict() {
        let a = json!({"name": "a", "description": "one"});
        let a2 = json!({"description": "one", "name": "a"});
        let b = json!({"name": "a", "description": "two"});
        let c = json!({"name": "c"});
        let k = ItemKind::Tool;
        assert!(conflicts(k, &[a.clone(), c.clone()]).is_empty());
        // The same definition twice (key order aside) is only repetition.
        assert!(conflicts(k, &[a.clone(), a2, c.clone()]).is_empty());
        assert_eq!(conflicts(k, &[a.clone(), c.clone(), b.clone()]), ["a"]);
        assert_eq!(conflicts(k, &[b.clone(), a.clone(), b]), ["a"]);
        let uri = json!({"uri": "x", "name": "n"});
        let uri2 = json!({"uri": "x", "name": "m"});
        assert_eq!(conflicts(ItemKind::Resource, &[uri, uri2]), ["x"]);
    }

    #[test]
    fn canonical_sorts_keys_by_utf16_and_normalises_numbers() {
        let v: Value = serde_json::from_str(
            r#"{"b": 1.0, "a": [true, null, 2.5], "\ue000": 1, "😀": 2}"#,
        )
        .unwrap();
        // U+1F600 is a surrogate pair (D83D...), which sorts before U+E000
        // in UTF-16 though after it in UTF-8.
        assert_eq!(
            canonical(&v),
            "{\"a\":[true,null,2.5],\"b\":1,\"😀\":2,\"\u{e000}\":1}"
        );
        assert_eq!(canonical(&json!("a\"\n\u{1}")), r#""a\"\n\u0001""#);
    }

    #[test]
    fn order_and_paging_are_not_contract() {
        let a = json!({"name": "a", "description": "A"});
        let b = json!({"name": "b", "description": "B"});
        let one = lock_of(snap(&[a.clone(), b.clone()])).render();
        let two = lock_of(snap(&[b, a])).render();
        assert_eq!(one, two);
    }

    #[test]
    fn render_then_parse_round_trips() {
        let s = snap(&[
            json!({"name": "echo", "description": "Echo.",
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "odd/na~me", "inputSchema": {"type": "object"}}),
        ]);
        let text = lock_of(s.clone()).render();
        let back = parse(Path::new("x"), &text).unwrap();
        assert_eq!(back.servers["demo"], s);
        assert_eq!(back.render(), text);
        let p = back.position("/servers/demo/tools/odd~1na~0me");
        assert!(p.line > 1, "{p:?}");
    }

    #[test]
    fn malformed_files_fail_with_a_position() {
        let text = lock_of(snap(&[json!({"name": "t", "description": "d"})]))
            .render();
        let bad = |t: &str, want: &str| {
            let e = parse(Path::new("x"), t).unwrap_err();
            assert!(e.contains(want), "{e}");
        };
        bad("{", "1:2");
        bad(&text.replace("\"d\"", "\"e\""), "sha256 does not match");
        bad(
            &text.replace("lockfileVersion\": 1", "lockfileVersion\": 2"),
            "lockfileVersion must be 1",
        );
        bad(&text.replace("\"protocol\"", "\"protocolz\""), "unknown field");
        bad(
            r#"{"lockfileVersion": 1, "servers": {}, "servers": {}}"#,
            "duplicate key",
        );
        bad(r#"{"lockfileVersion": 1}"#, "missing field 'servers'");
    }

    #[test]
    fn findings_name_fields_and_show_short_diffs() {
        let old = snap(&[
            json!({"name": "w", "description": "Write a file.",
                   "annotations": {"readOnlyHint": false}}),
            json!({"name": "gone"}),
        ]);
        let mut new = snap(&[
            json!({"name": "w", "description": "Write a file. Also mail it.",
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "fresh"}),
        ]);
        new.launch = "ffffffffffffffffffff".into();
        let f = compare("demo", Some(&old), Some(&new));
        let summaries: Vec<String> = f.iter().map(Finding::summary).collect();
        assert_eq!(
            summaries,
            [
                "server 'demo' changed: launch",
                "server 'demo': tool 'fresh' added",
                "server 'demo': tool 'gone' removed",
                "server 'demo': tool 'w' changed: annotations, description",
            ]
        );
        let d = &f[3].diffs[1];
        assert_eq!(d.old.as_deref(), Some("Write a file."));
        assert_eq!(d.new.as_deref(), Some("Write a file. Also mail it."));
        assert_eq!(f[2].pointer(), "/servers/demo/tools/gone");
        assert_eq!(f[1].pointer(), "/servers/demo/tools");
        assert!(compare("demo", Some(&old), Some(&old)).is_empty());
    }

    #[test]
    fn a_huge_description_gives_a_bounded_diff() {
        let big = "x".repeat(1 << 20);
        let old = snap(&[json!({"name": "t", "description": big})]);
        let changed = format!("{}Y{}", &big[..500_000], &big[500_001..]);
        let new = snap(&[json!({"name": "t", "description": changed})]);
        let f = compare("demo", Some(&old), Some(&new));
        let d = &f[0].diffs[0];
        let (o, n) = (d.old.as_deref().unwrap(), d.new.as_deref().unwrap());
        assert!(o.len() < 200 && n.len() < 200, "{o} / {n}");
        assert!(n.contains("xY") && o.starts_with('…'), "{n}");
    }

    #[test]
    fn call_time_check_refuses_drift_and_absence() {
        let l = lock_of(snap(&[json!({"name": "t", "description": "d"})]));
        let same = json!({"name": "t", "description": "d"});
        assert!(
            l.check_item("demo", ItemKind::Tool, "t", Some(&same)).is_ok()
        );
        let moved = json!({"name": "t", "description": "e"});
        let e = l
            .check_item("demo", ItemKind::Tool, "t", Some(&moved))
            .unwrap_err();
        assert!(e.starts_with("tool 't' changed since"), "{e}");
        assert!(e.contains("(description)"), "{e}");
        let e = l
            .check_item("demo", ItemKind::Tool, "new", Some(&same))
            .unwrap_err();
        assert!(e.contains("is not in"), "{e}");
        let e = l.check_item("demo", ItemKind::Tool, "t", None).unwrap_err();
        assert!(e.contains("no longer lists it"), "{e}");
        let e = l.check_item("other", ItemKind::Tool, "t", None).unwrap_err();
        assert!(e.contains("server is not in the lock file"), "{e}");
    }
}
