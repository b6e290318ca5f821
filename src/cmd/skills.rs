//! `rivumi-mcp skills [SERVER...]` and `rivumi-mcp skill get SERVER NAME
//! [--save DIR]`: the Skills extension (`mcp::skills`, SEP-2640).
//!
//! Listing reads only `skills/list`: no file of any skill is fetched ahead
//! of need. `skill get` takes the skill's entry from the listing (by name;
//! two entries of one name are refused, not guessed between) or, given the
//! URI of its `SKILL.md`, from `skills/get` (which a server answers for
//! every skill it serves, listed or not). It then reads the files with
//! `resources/read` (through the executor, journaled like any read),
//! `SKILL.md` first, and verifies each against the entry before anything
//! is printed or written: its size, then its SHA-256 digest, then (for
//! `SKILL.md`) its frontmatter, field by field. The first mismatch stops
//! the reading. As the SEP says for a stale entry, `skills/get` is then
//! asked once for the skill's current entry: a different one is verified
//! afresh from the start; the same one (or none) leaves the mismatch
//! standing, and the exit code is 9 (`Kind::Integrity`) with nothing of
//! the skill used.

use std::path::Path;

use serde_json::{Value, json};

use crate::error::{Error, Kind, Result};
use crate::executor::{Action, Executor};
use crate::launch::Context;
use crate::mcp::method;
use crate::mcp::skills::{self, File, Mismatch, Skill};
use crate::session::{MAX_ITEMS, MAX_PAGES, Session};
use crate::{msg, out, term};

/// Every skill a server lists (all pages, bounded). A server that does not
/// declare the extension has none (`None`).
pub(crate) fn list_all(s: &mut Session) -> Result<Option<Vec<Skill>>> {
    if !skills::declared(&s.server.capabilities) {
        return Ok(None);
    }
    let server = s.name().to_string();
    let mut all = vec![];
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let r = s.extension_request(
            skills::EXTENSION,
            method::SKILLS_LIST,
            params,
        )?;
        let (page, next) = skills::list_page(&r).map_err(|why| {
            Error::server(format!("{}: {why}", method::SKILLS_LIST))
                .for_server(&server)
        })?;
        all.extend(page);
        if all.len() >= MAX_ITEMS || next.is_none() || next == cursor {
            break;
        }
        cursor = next;
    }
    Ok(Some(all))
}

/// `skills [SERVER...]`: name, version, digest and description of each.
pub(crate) fn list(
    ctx: &Context,
    servers: &[String],
    json: bool,
) -> Result<()> {
    let names: Vec<String> = if servers.is_empty() {
        ctx.allowed_servers()?
    } else {
        servers.to_vec()
    };
    let mut rows = vec![vec![
        "SERVER".to_string(),
        "SKILL".into(),
        "VERSION".into(),
        "DIGEST".into(),
        "DESCRIPTION".into(),
    ]];
    let mut out_json = vec![];
    for name in &names {
        let mut s = ctx.start(name)?;
        let found = list_all(&mut s);
        s.close();
        let Some(found) = found? else {
            msg::debug(&format!(
                "server '{name}' does not declare {}",
                skills::EXTENSION
            ));
            if json {
                out_json.push(json!({"server": name, "skills": []}));
            }
            continue;
        };
        if json {
            let items: Vec<Value> = found.iter().map(entry_json).collect();
            out_json.push(json!({"server": name, "skills": items}));
            continue;
        }
        for k in &found {
            // Names are labels: one shared by two entries is shown as the
            // URIs that tell them apart.
            let shared = found.iter().filter(|o| o.name == k.name).count() > 1;
            rows.push(vec![
                name.clone(),
                if shared { k.uri.clone() } else { k.name.clone() },
                k.version.clone().unwrap_or_else(|| "-".into()),
                k.digest().map_or("dynamic".into(), short),
                term::clip(&term::line(&k.description), 60).into_owned(),
            ]);
        }
    }
    if json {
        return out::json(&json!({"servers": out_json}));
    }
    if rows.len() == 1 {
        msg::warn("no server lists any skill");
        return Ok(());
    }
    out::print_untrusted(&out::table(&rows))
}

fn short(d: &str) -> String {
    d.get(..19).unwrap_or(d).to_string()
}

fn entry_json(k: &Skill) -> Value {
    json!({
        "name": k.name,
        "uri": k.uri,
        "description": k.description,
        "version": k.version,
        "digest": k.digest(),
        "files": k.files.as_ref().map(|f| f.iter().map(|f| json!({
            "uri": f.uri, "digest": f.digest, "size": f.size})).collect::<Vec<_>>()),
    })
}

/// Whether `bytes` are the file its entry lists: size, then digest.
pub(crate) fn verify(
    f: &File,
    bytes: &[u8],
) -> std::result::Result<(), Mismatch> {
    let got = bytes.len() as u64;
    if got != f.size {
        return Err(Mismatch::Size { listed: f.size, got });
    }
    if digest(bytes) != f.digest {
        return Err(Mismatch::Digest);
    }
    Ok(())
}

/// `sha256:<hex>` of `bytes`, as skill entries write digests.
pub(crate) fn digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("sha256:{}", crate::files::hex(&Sha256::digest(bytes)))
}

/// The bytes of a `resources/read` result for `uri`: its text, or its
/// blob decoded.
fn contents(
    result: &Value,
    uri: &str,
) -> std::result::Result<Vec<u8>, String> {
    let items = result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or("the result has no 'contents' array")?;
    let c = items
        .iter()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
        .or_else(|| (items.len() == 1).then(|| &items[0]))
        .ok_or("no content for the file's URI")?;
    if let Some(t) = c.get("text").and_then(Value::as_str) {
        return Ok(t.as_bytes().to_vec());
    }
    if let Some(b) = c.get("blob").and_then(Value::as_str) {
        use base64::Engine;
        return base64::engine::general_purpose::STANDARD
            .decode(b)
            .map_err(|e| format!("its blob is not base64: {e}"));
    }
    Err("the content has neither text nor blob".into())
}

/// A verified file: its URI and bytes.
type Fetched = (String, Vec<u8>);

/// `skill get SERVER NAME [--save DIR]`.
pub(crate) fn get(
    ctx: &Context,
    exec: &Executor,
    server: &str,
    name: &str,
    save: Option<&Path>,
    json: bool,
) -> Result<()> {
    let mut s = ctx.start(server)?;
    let r = fetch(ctx, exec, &mut s, name);
    s.close();
    let (skill, files) = r?;
    if let Some(dir) = save {
        let written = write_all(dir, &skill, &files)?;
        if json {
            return out::json(
                &json!({"server": server, "skill": entry_json(&skill),
                                     "verified": true, "saved": written}),
            );
        }
        msg::line(&format!(
            "rivumi-mcp: server '{server}': skill '{}' verified; {} file(s) saved under {}",
            skill.name,
            files.len(),
            dir.join(&skill.name).display()
        ));
        return Ok(());
    }
    let text = String::from_utf8_lossy(&files[0].1).into_owned();
    if json {
        return out::json(
            &json!({"server": server, "skill": entry_json(&skill),
                                 "verified": true, "text": text}),
        );
    }
    out::print_untrusted(&text)
}

/// Finds the skill's entry, reads its files (`SKILL.md` first) and
/// verifies each; the first mismatch ends it with `Kind::Integrity`,
/// unless `skills/get` then gives a newer entry (the content read was
/// stale, not tampered with: the SEP's recovery), which is verified
/// afresh, once.
fn fetch(
    ctx: &Context,
    exec: &Executor,
    s: &mut Session,
    name: &str,
) -> Result<(Skill, Vec<Fetched>)> {
    let server = s.name().to_string();
    if !skills::declared(&s.server.capabilities) {
        return Err(Error::usage(format!(
            "server '{server}' does not declare the skills extension ({})",
            skills::EXTENSION
        )));
    }
    let mut skill = if name.contains("://") {
        // A URI alone is enough: the server answers skills/get for every
        // skill it serves, listed or not.
        get_entry(s, name)?.ok_or_else(|| {
            Error::usage(format!(
                "server '{server}' serves no skill at {} ({} answered \
                 -32602)",
                term::clip(&term::line(name), 100),
                method::SKILLS_GET
            ))
        })?
    } else {
        find_listed(s, name)?
    };
    let mut refreshed = false;
    loop {
        let Some(list) = skill.files.clone() else {
            return Err(Error::new(
                Kind::Integrity,
                format!(
                    "skill '{}' lists its files as dynamic: nothing to \
                     verify them against, so they are not fetched",
                    skill.name
                ),
            )
            .for_server(&server));
        };
        let (uri, why) = match read_verified(ctx, exec, s, &skill, &list)? {
            Ok(files) => return Ok((skill, files)),
            Err(failed) => failed,
        };
        let again = refreshed;
        let fresh = if again { None } else { refresh(s, &skill) };
        refreshed = true;
        if let Some(fresh) = fresh {
            msg::warn(&format!(
                "server '{server}': skill '{}': {} failed verification \
                 ({why}); {} gave a newer entry, verifying that one",
                skill.name,
                term::clip(&term::line(&uri), 100),
                method::SKILLS_GET
            ));
            crate::journal::event(
                "skill_refreshed",
                json!({"server": server, "skill": skill.name, "uri": uri,
                       "why": why.to_string()}),
            );
            skill = fresh;
            continue;
        }
        crate::journal::event(
            "skill_refused",
            json!({"server": server, "skill": skill.name, "uri": uri,
                   "why": why.to_string()}),
        );
        return Err(Error::new(
            Kind::Integrity,
            format!(
                "skill '{}': {} failed verification ({why}) {}; nothing of \
                 the skill was used",
                skill.name,
                term::clip(&term::line(&uri), 100),
                if again {
                    "against the newer entry too".to_string()
                } else {
                    format!("and {} gave no newer entry", method::SKILLS_GET)
                }
            ),
        )
        .for_server(&server));
    }
}

/// The listed skill named `name` (or with that URI). Names are labels:
/// two entries of one name are not told apart by guessing, the operator
/// gives the URI.
fn find_listed(s: &mut Session, name: &str) -> Result<Skill> {
    let server = s.name().to_string();
    let found = list_all(s)?.unwrap_or_default();
    let mut hits: Vec<Skill> = found
        .into_iter()
        .filter(|k| k.name == name || k.uri == name)
        .collect();
    if hits.len() > 1 {
        let uris: Vec<String> = hits
            .iter()
            .map(|k| term::clip(&term::line(&k.uri), 100).into_owned())
            .collect();
        return Err(Error::usage(format!(
            "server '{server}' lists {} skills named '{}' ({}): give the \
             URI of the one to fetch",
            hits.len(),
            term::clip(&term::line(name), 64),
            uris.join(", ")
        )));
    }
    hits.pop().ok_or_else(|| {
        Error::usage(format!(
            "server '{server}' lists no skill '{}' (a listing may be \
             partial: a skill it does not list is fetched by the URI of its \
             {})",
            term::clip(&term::line(name), 64),
            skills::SKILL_MD
        ))
    })
}

/// The entry `skills/get` gives for `uri`; `None` when the server serves
/// no skill there (-32602).
fn get_entry(s: &mut Session, uri: &str) -> Result<Option<Skill>> {
    let server = s.name().to_string();
    let answer = s.extension_answer(
        skills::EXTENSION,
        method::SKILLS_GET,
        json!({"uri": uri}),
    )?;
    let result = match answer {
        Ok(r) => r,
        Err(e) if e.code == Some(crate::mcp::code::INVALID_PARAMS) => {
            return Ok(None);
        }
        Err(e) => {
            return Err(Error::server(format!(
                "{}: {}",
                method::SKILLS_GET,
                e.describe()
            ))
            .for_server(&server));
        }
    };
    skills::get_result(&result, uri).map(Some).map_err(|why| {
        Error::server(format!("{}: {why}", method::SKILLS_GET))
            .for_server(&server)
    })
}

/// After a mismatch: the skill's current entry from `skills/get`, when it
/// differs from the one held (then the content read was stale). The same
/// entry, an error or a malformed answer leave the mismatch standing.
fn refresh(s: &mut Session, held: &Skill) -> Option<Skill> {
    match get_entry(s, &held.uri) {
        Ok(Some(fresh)) if !skills::same_content(&fresh, held) => Some(fresh),
        Ok(Some(_)) => {
            msg::debug(&format!(
                "{}: the same entry: the content is not merely stale",
                method::SKILLS_GET
            ));
            None
        }
        Ok(None) => {
            msg::debug(&format!(
                "{}: the server no longer serves the skill",
                method::SKILLS_GET
            ));
            None
        }
        Err(e) => {
            msg::debug(&format!("no newer entry: {e}"));
            None
        }
    }
}

/// A file that failed verification: its URI and why.
type Failed = (String, Mismatch);

/// Reads `list` (`SKILL.md` first) and verifies each file against the
/// entry; stops at the first that fails, before any other is read.
fn read_verified(
    ctx: &Context,
    exec: &Executor,
    s: &mut Session,
    skill: &Skill,
    list: &[File],
) -> Result<std::result::Result<Vec<Fetched>, Failed>> {
    let server = s.name().to_string();
    // SKILL.md first: nothing else is read unless it verifies.
    let mut order: Vec<&File> =
        list.iter().filter(|f| f.uri == skill.uri).collect();
    order.extend(list.iter().filter(|f| f.uri != skill.uri));
    let transport = ctx.transport_name(&server);
    let mut files = vec![];
    for f in order {
        let obs = exec.run(s, Action::Read { uri: &f.uri }, transport)?;
        let bytes = contents(obs.whole(), &f.uri).map_err(|why| {
            Error::server(format!(
                "{} {}: {why}",
                method::RESOURCES_READ,
                term::clip(&term::line(&f.uri), 100)
            ))
            .for_server(&server)
        })?;
        let mut checked = verify(f, &bytes);
        if checked.is_ok() && f.uri == skill.uri {
            let text = String::from_utf8_lossy(&bytes);
            checked = skills::check_frontmatter(&text, &skill.frontmatter);
        }
        if let Err(why) = checked {
            return Ok(Err((f.uri.clone(), why)));
        }
        files.push((f.uri.clone(), bytes));
    }
    Ok(Ok(files))
}

/// Writes every verified file under `DIR/<name>/`, never overwriting;
/// returns the paths written.
fn write_all(
    dir: &Path,
    skill: &Skill,
    files: &[Fetched],
) -> Result<Vec<String>> {
    use std::io::Write;
    let root = dir.join(&skill.name);
    let mut written = vec![];
    for (uri, bytes) in files {
        let rel = skill.relative(uri).ok_or_else(|| {
            Error::server(format!("skill file outside the skill: {uri}"))
        })?;
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                Error::usage(format!("--save: {}: {e}", parent.display()))
            })?;
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| {
                Error::usage(format!("--save: {}: {e}", path.display()))
            })?;
        f.write_all(bytes).map_err(|e| {
            Error::usage(format!("--save: {}: {e}", path.display()))
        })?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_then_digest() {
        let body = b"hello";
        let f = File { uri: "u".into(), digest: digest(body), size: 5 };
        assert_eq!(verify(&f, body), Ok(()));
        assert_eq!(
            verify(&f, b"hello!"),
            Err(Mismatch::Size { listed: 5, got: 6 })
        );
        assert_eq!(verify(&f, b"jello"), Err(Mismatch::Digest));
    }

    #[test]
    fn contents_take_text_or_blob() {
        let r = json!({"contents": [{"uri": "a", "text": "hi"}]});
        assert_eq!(contents(&r, "a").unwrap(), b"hi");
        let r = json!({"contents": [{"uri": "a", "blob": "aGk="}]});
        assert_eq!(contents(&r, "a").unwrap(), b"hi");
        assert!(contents(&json!({}), "a").is_err());
    }
}
