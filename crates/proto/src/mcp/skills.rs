//! Skills (SEP-2640, the extension `io.modelcontextprotocol/skills`): a
//! server lists skill entries (`skills/list`, `skills/get`), each naming
//! its `SKILL.md` by URI, the frontmatter that file must carry, and every
//! file of the skill with its size and SHA-256 digest. The files are read
//! with `resources/read`, only when the operator asks for the skill, and
//! are used only once verified against the entry: size first, then the
//! digest, then (for `SKILL.md`) the frontmatter, field by field. The
//! digest itself is computed by the caller (this crate does no hashing);
//! everything else is here, on values.

use serde_json::{Map, Value};

use crate::term;

/// The extension's identifier, in a server's `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";

/// The most files one skill may list (the SEP's limit).
pub const MAX_FILES: usize = 512;

/// The most bytes one skill may hold in all (the SEP's 16 MiB).
pub const MAX_TOTAL: u64 = 16 << 20;

/// Whether a server's capabilities declare the extension.
pub fn declared(capabilities: &Value) -> bool {
    capabilities
        .pointer("/extensions")
        .and_then(Value::as_object)
        .is_some_and(|e| e.contains_key(EXTENSION))
}

/// One file of a skill, as its entry lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    /// Where the file is read from.
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: String,
    /// Its size in bytes, as listed.
    pub size: u64,
}

/// A skill entry (untrusted; every field checked).
#[derive(Clone, Debug, PartialEq)]
pub struct Skill {
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// `frontmatter.name`: the last path segment before `SKILL.md`.
    pub name: String,
    /// `frontmatter.description`.
    pub description: String,
    /// `frontmatter.version` or `frontmatter.metadata.version`, if any.
    pub version: Option<String>,
    /// The frontmatter as the entry gives it.
    pub frontmatter: Map<String, Value>,
    /// Its files, `SKILL.md` first; `None` when the server lists them as
    /// `"dynamic"` (not verifiable: refused when fetched).
    pub files: Option<Vec<File>>,
    /// The entry as the server sent it (what `lock` pins).
    pub entry: Value,
}

impl Skill {
    /// The `SKILL.md` file of the entry, if listed.
    pub fn skill_md(&self) -> Option<&File> {
        self.files.as_ref()?.iter().find(|f| f.uri == self.uri)
    }

    /// The digest shown and pinned for the skill: its `SKILL.md`'s.
    pub fn digest(&self) -> Option<&str> {
        self.skill_md().map(|f| f.digest.as_str())
    }

    /// A file's path inside the skill (after the skill's directory), or
    /// `None` when the URI is outside it or climbs out of it.
    pub fn relative<'a>(&self, uri: &'a str) -> Option<&'a str> {
        let dir = self.uri.strip_suffix(SKILL_MD)?;
        let rel = uri.strip_prefix(dir)?;
        let ok = !rel.is_empty()
            && rel.split('/').all(|seg| {
                !seg.is_empty()
                    && seg != "."
                    && seg != ".."
                    && !seg.contains('\\')
                    && seg.chars().all(|c| !c.is_control())
            });
        ok.then_some(rel)
    }
}

/// Reads one skill entry.
pub fn parse(v: &Value) -> Result<Skill, String> {
    let uri = v
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("a skill entry without a string 'uri'")?;
    let shown = term::clip(&term::line(uri), 100).into_owned();
    let frontmatter = v
        .get("frontmatter")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("skill {shown}: no 'frontmatter' object"))?;
    let text = |k: &str| frontmatter.get(k).and_then(Value::as_str);
    let name = text("name")
        .filter(|n| !n.is_empty())
        .ok_or_else(|| format!("skill {shown}: frontmatter without a name"))?;
    if !valid_name(name) {
        return Err(format!(
            "skill {shown}: the name '{}' breaks the naming rules",
            term::clip(&term::line(name), 64)
        ));
    }
    let expected = format!("/{name}/{SKILL_MD}");
    if !uri.ends_with(&expected) || !uri.contains("://") {
        return Err(format!(
            "skill {shown}: its URI does not end in {expected}"
        ));
    }
    let description = text("description").unwrap_or_default().to_string();
    let version = text("version")
        .or_else(|| {
            frontmatter
                .get("metadata")
                .and_then(|m| m.get("version"))
                .and_then(Value::as_str)
        })
        .map(str::to_string);
    let files = match v.get("resources") {
        Some(Value::String(s)) if s == "dynamic" => None,
        Some(Value::Array(a)) => {
            if a.len() > MAX_FILES {
                return Err(format!(
                    "skill {shown}: more than {MAX_FILES} files"
                ));
            }
            let files = a
                .iter()
                .map(|f| {
                    file(f).map_err(|why| format!("skill {shown}: {why}"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let total: u64 = files.iter().map(|f| f.size).sum();
            if total > MAX_TOTAL {
                return Err(format!(
                    "skill {shown}: {total} bytes in all, over the 16 MiB limit"
                ));
            }
            Some(files)
        }
        _ => {
            return Err(format!(
                "skill {shown}: 'resources' is neither a list nor \"dynamic\""
            ));
        }
    };
    let skill = Skill {
        uri: uri.to_string(),
        name: name.to_string(),
        description,
        version,
        frontmatter: frontmatter.clone(),
        files,
        entry: v.clone(),
    };
    if let Some(files) = &skill.files {
        if skill.skill_md().is_none() {
            return Err(format!(
                "skill {shown}: its {SKILL_MD} is not listed"
            ));
        }
        if let Some(f) = files
            .iter()
            .find(|f| f.uri != skill.uri && skill.relative(&f.uri).is_none())
        {
            return Err(format!(
                "skill {shown}: the file {} is outside the skill",
                term::clip(&term::line(&f.uri), 100)
            ));
        }
    }
    Ok(skill)
}

fn file(v: &Value) -> Result<File, String> {
    let uri = v
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("a file without a string 'uri'")?;
    let digest = v
        .get("digest")
        .and_then(Value::as_str)
        .filter(|d| valid_digest(d))
        .ok_or_else(|| {
            format!(
                "the file {} has no digest of the form sha256:<64 hex>",
                term::clip(&term::line(uri), 100)
            )
        })?;
    let size = v.get("size").and_then(Value::as_u64).ok_or_else(|| {
        format!("the file {} has no size", term::clip(&term::line(uri), 100))
    })?;
    Ok(File { uri: uri.to_string(), digest: digest.to_string(), size })
}

/// `sha256:` and 64 lowercase hex digits.
pub fn valid_digest(d: &str) -> bool {
    d.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The Agent Skills naming rules: 1 to 64 of lowercase letters, digits
/// and hyphens, no hyphen first, last or twice in a row.
pub fn valid_name(n: &str) -> bool {
    (1..=64).contains(&n.len())
        && n.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'))
        && !n.starts_with('-')
        && !n.ends_with('-')
        && !n.contains("--")
}

/// The page of `skills/list`: its entries (a malformed one is an error
/// naming it) and the next cursor.
pub fn list_page(
    result: &Value,
) -> Result<(Vec<Skill>, Option<String>), String> {
    let items = result
        .get("skills")
        .and_then(Value::as_array)
        .ok_or("'skills' is not an array")?;
    let skills = items.iter().map(parse).collect::<Result<Vec<_>, _>>()?;
    let next = result
        .get("nextCursor")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    Ok((skills, next))
}

/// The entry of a `skills/get` result for `uri`: `result.skill`, read as
/// a listing entry is, and for that very URI (a server answering for
/// another skill is an error).
pub fn get_result(result: &Value, uri: &str) -> Result<Skill, String> {
    let entry = result
        .get("skill")
        .filter(|v| v.is_object())
        .ok_or("the result has no 'skill' object")?;
    let skill = parse(entry)?;
    if skill.uri != uri {
        return Err(format!(
            "it answered with the skill {} for {}",
            term::clip(&term::line(&skill.uri), 100),
            term::clip(&term::line(uri), 100)
        ));
    }
    Ok(skill)
}

/// Whether two entries of one skill describe the same content: the same
/// `SKILL.md` URI, frontmatter and files (a fresh entry that differs is a
/// newer version of the skill; the same one means the content read is not
/// merely stale).
pub fn same_content(a: &Skill, b: &Skill) -> bool {
    a.uri == b.uri && a.frontmatter == b.frontmatter && a.files == b.files
}

/// Why a file failed verification.
#[derive(Clone, Debug, PartialEq)]
pub enum Mismatch {
    /// The bytes read are not as many as listed.
    Size {
        /// The size the entry lists.
        listed: u64,
        /// The size read.
        got: u64,
    },
    /// The SHA-256 of the bytes is not the listed digest.
    Digest,
    /// `SKILL.md`'s frontmatter differs from the entry's (the field).
    Frontmatter(String),
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mismatch::Size { listed, got } => {
                write!(f, "{got} bytes, but its entry lists {listed}")
            }
            Mismatch::Digest => {
                f.write_str("its SHA-256 differs from its entry's digest")
            }
            Mismatch::Frontmatter(why) => {
                write!(f, "its frontmatter differs from its entry's: {why}")
            }
        }
    }
}

/// Compares `SKILL.md`'s frontmatter with the entry's, field by field.
pub fn check_frontmatter(
    text: &str,
    entry: &Map<String, Value>,
) -> Result<(), Mismatch> {
    let got = frontmatter(text).ok_or_else(|| {
        Mismatch::Frontmatter(
            "no frontmatter this client can read at its start".into(),
        )
    })?;
    let mut keys: Vec<&String> = got.keys().chain(entry.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let a = got.get(k).unwrap_or(&Value::Null);
        let b = entry.get(k).unwrap_or(&Value::Null);
        if !same(a, b) {
            return Err(Mismatch::Frontmatter(format!(
                "field '{}'",
                term::clip(&term::line(k), 60)
            )));
        }
    }
    Ok(())
}

/// YAML scalars are read as text: a number or boolean in the entry
/// compares equal to the same text in the file.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        (Value::String(s), Value::Number(n))
        | (Value::Number(n), Value::String(s)) => *s == n.to_string(),
        (Value::String(s), Value::Bool(v))
        | (Value::Bool(v), Value::String(s)) => *s == v.to_string(),
        _ => a == b,
    }
}

/// The YAML frontmatter at the start of a `SKILL.md`, read as far as
/// skills use it: `key: value` scalars (plain, single- or double-quoted),
/// flow lists `[a, b]`, block lists (`- a`) and one level of nested
/// mappings. Anything else (anchors, multi-line scalars, deeper nesting)
/// is `None`: not understood is not verified.
pub fn frontmatter(text: &str) -> Option<Map<String, Value>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest =
        text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n"))?;
    let mut lines = vec![];
    let mut closed = false;
    for line in rest.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        lines.push(line);
    }
    if !closed {
        return None;
    }
    let mut top = Map::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with(' ') || line.starts_with('\t') {
            return None;
        }
        let (key, value) = split_key(line)?;
        if !value.is_empty() {
            top.insert(key, scalar_or_flow(value)?);
            continue;
        }
        // A nested block: a list or a mapping, indented.
        let mut block = vec![];
        while i < lines.len()
            && (lines[i].starts_with(' ') || lines[i].trim().is_empty())
        {
            if !lines[i].trim().is_empty() {
                block.push(lines[i].trim_start());
            }
            i += 1;
        }
        let v = if block.is_empty() {
            Value::Null
        } else if block.iter().all(|l| l.starts_with("- ") || *l == "-") {
            Value::Array(
                block
                    .iter()
                    .map(|l| scalar(l.trim_start_matches('-').trim()))
                    .collect::<Option<Vec<_>>>()?,
            )
        } else {
            let mut m = Map::new();
            for l in block {
                let (k, v) = split_key(l)?;
                if v.is_empty() {
                    return None;
                }
                m.insert(k, scalar_or_flow(v)?);
            }
            Value::Object(m)
        };
        top.insert(key, v);
    }
    Some(top)
}

fn split_key(line: &str) -> Option<(String, &str)> {
    let (k, v) = line.split_once(':')?;
    let k = k.trim();
    if k.is_empty() || k.contains(['"', '\'', '[', '{', '&', '*', '!']) {
        return None;
    }
    let v = v.trim();
    if !v.is_empty()
        && !line[k.len()..].starts_with(": ")
        && !line[k.len()..].starts_with(":\t")
    {
        return None;
    }
    Some((k.to_string(), v))
}

fn scalar_or_flow(v: &str) -> Option<Value> {
    if let Some(inner) = v.strip_prefix('[').and_then(|r| r.strip_suffix(']'))
    {
        if inner.trim().is_empty() {
            return Some(Value::Array(vec![]));
        }
        return inner
            .split(',')
            .map(|s| scalar(s.trim()))
            .collect::<Option<Vec<_>>>()
            .map(Value::Array);
    }
    scalar(v)
}

fn scalar(v: &str) -> Option<Value> {
    if v.starts_with(['{', '&', '*', '!', '|', '>', '[']) {
        return None;
    }
    if let Some(s) = v.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        if s.contains('\\') {
            return None;
        }
        return Some(Value::String(s.to_string()));
    }
    if let Some(s) = v.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
        return Some(Value::String(s.replace("''", "'")));
    }
    if v.starts_with(['"', '\'']) {
        return None;
    }
    // A comment after a plain scalar.
    let v = match v.find(" #") {
        Some(i) => v[..i].trim_end(),
        None => v,
    };
    Some(match v {
        "" | "~" | "null" => Value::Null,
        _ => Value::String(v.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\n# PDF\n\nSkill body.\n";

    fn entry() -> Value {
        json!({"uri": "skill://pdf-processing/SKILL.md",
               "frontmatter": {"name": "pdf-processing",
                 "description": "Extract, fill, and assemble PDF documents"},
               "resources": [
                 {"uri": "skill://pdf-processing/SKILL.md",
                  "digest": format!("sha256:{}", "a".repeat(64)), "size": 10},
                 {"uri": "skill://pdf-processing/references/FORMS.md",
                  "digest": format!("sha256:{}", "b".repeat(64)), "size": 5}]})
    }

    #[test]
    fn a_get_result_is_the_entry_for_its_uri() {
        let uri = "skill://pdf-processing/SKILL.md";
        let got = get_result(&json!({"skill": entry()}), uri).unwrap();
        assert_eq!(got, parse(&entry()).unwrap());
        assert!(same_content(&got, &parse(&entry()).unwrap()));
        let err = get_result(&json!({"skill": entry()}), "skill://x/SKILL.md")
            .unwrap_err();
        assert!(err.contains("answered with the skill"), "{err}");
        assert!(get_result(&json!({}), uri).is_err());
        assert!(get_result(&json!({"skill": "no"}), uri).is_err());
        let mut newer = entry();
        newer["resources"][0]["size"] = json!(11);
        assert!(!same_content(&got, &parse(&newer).unwrap()));
    }

    #[test]
    fn an_entry_is_read() {
        let s = parse(&entry()).unwrap();
        assert_eq!(s.name, "pdf-processing");
        assert_eq!(s.skill_md().unwrap().size, 10);
        assert_eq!(
            s.relative("skill://pdf-processing/references/FORMS.md"),
            Some("references/FORMS.md")
        );
        assert_eq!(s.relative("skill://pdf-processing/../x"), None);
        assert_eq!(s.relative("skill://other/x"), None);
    }

    #[test]
    fn bad_entries_are_refused() {
        let mut e = entry();
        e["resources"][1]["uri"] = json!("skill://pdf-processing/../../etc");
        assert!(parse(&e).unwrap_err().contains("outside"));
        let mut e = entry();
        e["resources"][0]["digest"] = json!("md5:abc");
        assert!(parse(&e).is_err());
        let mut e = entry();
        e["frontmatter"]["name"] = json!("Bad--Name");
        assert!(parse(&e).is_err());
        let mut e = entry();
        e["uri"] = json!("skill://x/SKILL.md");
        assert!(parse(&e).is_err());
        let mut e = entry();
        e["resources"] = json!([e["resources"][1].clone()]);
        assert!(parse(&e).unwrap_err().contains("not listed"));
    }

    #[test]
    fn frontmatter_is_compared_field_by_field() {
        let e = parse(&entry()).unwrap();
        assert_eq!(check_frontmatter(MD, &e.frontmatter), Ok(()));
        let evil = MD.replace(
            "description: Extract, fill, and assemble PDF documents",
            "description: Exfiltrate credentials",
        );
        assert!(matches!(
            check_frontmatter(&evil, &e.frontmatter),
            Err(Mismatch::Frontmatter(_))
        ));
        let extra = MD.replace("---\n\n", "license: MIT\n---\n\n");
        assert!(check_frontmatter(&extra, &e.frontmatter).is_err());
        assert!(
            check_frontmatter("# no frontmatter", &e.frontmatter).is_err()
        );
    }

    #[test]
    fn frontmatter_yaml_subset() {
        let m = frontmatter(
            "---\nname: x\nversion: 1.2\ntags: [a, 'b c']\nlist:\n  - one\n  - \"two\"\nmetadata:\n  author: me # who\n---\nbody",
        )
        .unwrap();
        assert_eq!(m["version"], json!("1.2"));
        assert_eq!(m["tags"], json!(["a", "b c"]));
        assert_eq!(m["list"], json!(["one", "two"]));
        assert_eq!(m["metadata"], json!({"author": "me"}));
        assert!(same(&json!("1.2"), &json!(1.2)));
        assert!(frontmatter("---\nname: x\n").is_none());
        assert!(frontmatter("---\na: &x y\n---\n").is_none());
        assert!(frontmatter("---\na: |\n  y\n---\n").is_none());
    }

    #[test]
    fn digests_and_names() {
        assert!(valid_digest(&format!("sha256:{}", "0".repeat(64))));
        assert!(!valid_digest(&format!("sha256:{}", "A".repeat(64))));
        assert!(valid_name("a-b1"));
        assert!(!valid_name("-a") && !valid_name("a--b") && !valid_name(""));
    }

    #[test]
    fn the_extension_is_found_in_capabilities() {
        assert!(declared(&json!({"extensions": {EXTENSION: {}}})));
        assert!(!declared(&json!({"resources": {}})));
    }
}
