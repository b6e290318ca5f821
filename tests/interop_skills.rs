//! Skills (SEP-2640) against a real server of the extension: the
//! TypeScript SDK v2 (`@modelcontextprotocol/server` 2.4.0 and its
//! `ext/skills`, pinned in fixtures/interop/skills-node, installed into
//! `.interop/skills-node`), run by `fixtures/skills/ts_skills_server.mjs`.
//! The SDK answers `skills/list`, `skills/get` and `resources/read`,
//! computes every digest and validates every entry; the script only picks
//! the files it is given (its own directory catalog with `--catalog`).
//!
//! Listed, fetched, printed and saved (in both eras); a skill the listing
//! leaves out fetched by its URI with `skills/get`; a tampered `SKILL.md`
//! (digest, size, frontmatter) refused with exit 9 after one `skills/get`
//! that gives the same entry, nothing else read; a skill edited between
//! the listing and the read recovered through `skills/get`, as the SEP
//! says; two skills of one name told apart only by their URIs.

use std::path::PathBuf;

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::util::interop::node_and;
use crate::util::{
    Dir, TestCommand, assert_contains, repo_root, run_allowed, write_mcp_json,
};

const SERVER: &str = "fixtures/skills/ts_skills_server.mjs";
const SDK: &str = ".interop/skills-node/node_modules/@modelcontextprotocol/\
                   server/package.json";
const MD_URI: &str = "skill://pdf-processing/SKILL.md";
const FORMS_URI: &str = "skill://pdf-processing/references/FORMS.md";

/// The fixture's skill as files.
fn skill_md() -> String {
    std::fs::read_to_string(
        repo_root()
            .join("fixtures/skills/skills-root/pdf-processing/SKILL.md"),
    )
    .unwrap()
}

fn forms_md() -> String {
    std::fs::read_to_string(repo_root().join(
        "fixtures/skills/skills-root/pdf-processing/references/FORMS.md",
    ))
    .unwrap()
}

/// A directory with a fresh copy of the skill under `root/` (and, with
/// `hidden`, a second skill `hidden-notes`) and an `.mcp.json` whose server
/// `sk` is the SDK server with `args` (after `--root root --log log`), in
/// the era `protocol` (`auto`, `modern` or `legacy`).
fn setup(
    test: &str,
    args: &[&str],
    protocol: &str,
    hidden: bool,
) -> Option<Dir> {
    let node =
        node_and(test, &[repo_root().join(SERVER), repo_root().join(SDK)])?;
    let dir = Dir::new(test);
    dir.create_dir("root/pdf-processing/references");
    dir.write("root/pdf-processing/SKILL.md", skill_md());
    dir.write("root/pdf-processing/references/FORMS.md", forms_md());
    if hidden {
        dir.create_dir("root/hidden-notes");
        dir.write(
            "root/hidden-notes/SKILL.md",
            "---\nname: hidden-notes\ndescription: Served, never listed\n\
             ---\n\nHidden body.\n",
        );
    }
    let mut argv = vec![
        json!(repo_root().join(SERVER)),
        json!("--root"),
        json!(dir.path("root")),
        json!("--log"),
        json!(dir.path("log")),
    ];
    argv.extend(args.iter().map(|a| json!(a)));
    let mut entry = json!({"command": node, "args": argv});
    if protocol != "auto" {
        entry["protocol"] = json!(protocol);
    }
    write_mcp_json(&dir, &[("sk", entry)]);
    Some(dir)
}

/// What the SDK was asked, one call a line (`list`, `get URI`, `read URI`).
fn log(dir: &Dir) -> String {
    std::fs::read_to_string(dir.path("log")).unwrap_or_default()
}

fn sha256(text: &str) -> String {
    let d = Sha256::digest(text.as_bytes());
    format!(
        "sha256:{}",
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

fn get(dir: &Dir, what: &str, extra: &[&str]) -> TestCommand {
    let mut args = vec!["skill", "get", "sk", what];
    args.extend(extra);
    run_allowed(dir, "sk", &args)
}

fn saved(dir: &Dir, rel: &str) -> String {
    let p: PathBuf = dir.path("out/pdf-processing").join(rel);
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The SDK's own directory catalog (`loadSkills`): listed with the SDK's
/// digest, printed and saved byte for byte, in both eras.
#[test]
fn interop_skills_listed_fetched_and_saved_from_the_sdk_catalog() {
    for protocol in ["modern", "legacy"] {
        let test = format!("interop_skills_catalog_{protocol}");
        let Some(dir) = setup(&test, &["--catalog"], protocol, false) else {
            return;
        };
        let out = run_allowed(&dir, "sk", &["skills", "sk", "--json"])
            .assert_exit(0);
        let v = out.stdout_json();
        let k = &v["servers"][0]["skills"][0];
        assert_eq!(k["name"], json!("pdf-processing"), "{protocol}");
        assert_eq!(k["uri"], json!(MD_URI), "{protocol}");
        assert_eq!(k["digest"], json!(sha256(&skill_md())), "{protocol}");
        let files = k["files"].as_array().unwrap();
        assert_eq!(files.len(), 2, "{protocol}");
        assert!(
            files.iter().any(|f| f["uri"] == json!(FORMS_URI)
                && f["digest"] == json!(sha256(&forms_md()))),
            "{protocol}: {files:?}"
        );

        let out = get(&dir, "pdf-processing", &[]).assert_exit(0);
        assert_eq!(out.stdout.trim_end(), skill_md().trim_end(), "{protocol}");

        let out =
            get(&dir, "pdf-processing", &["--save", "out"]).assert_exit(0);
        assert_contains(&out.stderr, "verified; 2 file(s) saved");
        assert_eq!(saved(&dir, "SKILL.md"), skill_md(), "{protocol}");
        assert_eq!(saved(&dir, "references/FORMS.md"), forms_md());

        // By URI: skills/get, then the same verified read.
        let out = get(&dir, MD_URI, &["--json"]).assert_exit(0);
        let v = out.stdout_json();
        assert_eq!(v["verified"], json!(true), "{protocol}");
        assert_eq!(v["text"], json!(skill_md()), "{protocol}");
    }
}

/// A skill the listing leaves out is fetched by its URI through
/// `skills/get`, with no listing at all; by name it is not found, and a
/// URI the server does not serve (its -32602) is a usage error.
#[test]
fn interop_skills_get_by_uri_asks_skills_get() {
    let test = "interop_skills_get_by_uri";
    let Some(dir) = setup(test, &["--unlisted", "hidden-notes"], "auto", true)
    else {
        return;
    };
    let out = run_allowed(&dir, "sk", &["skills"]).assert_exit(0);
    assert_contains(&out.stdout, "pdf-processing");
    assert!(!out.stdout.contains("hidden-notes"), "{}", out.stdout);
    assert_eq!(log(&dir), "list\n", "listing read a file");

    std::fs::remove_file(dir.path("log")).unwrap();
    let out = get(&dir, "skill://hidden-notes/SKILL.md", &[]).assert_exit(0);
    assert_contains(&out.stdout, "Hidden body.");
    assert_eq!(
        log(&dir),
        "get skill://hidden-notes/SKILL.md\n\
         read skill://hidden-notes/SKILL.md\n"
    );

    let out = get(&dir, "hidden-notes", &[]).assert_exit(2);
    assert_contains(&out.stderr, "lists no skill 'hidden-notes'");
    assert_contains(&out.stderr, "fetched by the URI of its SKILL.md");

    let out = get(&dir, "skill://nope/SKILL.md", &[]).assert_exit(2);
    assert_contains(&out.stderr, "serves no skill at skill://nope/SKILL.md");
}

/// The SDK serves a `SKILL.md` its entry does not describe (a tampering
/// intermediary): refused with exit 9 and the reason; `skills/get` gives
/// the same entry, so nothing is read again; the supporting file is never
/// read; nothing is printed or saved.
#[test]
fn interop_skills_tampered_refused_with_exit_9() {
    for (tamper, why) in [
        ("digest", "its SHA-256 differs from its entry's digest"),
        ("size", "bytes, but its entry lists"),
        (
            "frontmatter",
            "its frontmatter differs from its entry's: field 'description'",
        ),
    ] {
        let test = format!("interop_skills_tampered_{tamper}");
        let Some(dir) = setup(&test, &["--tamper", tamper], "auto", false)
        else {
            return;
        };
        let out = get(&dir, "pdf-processing", &["--save", "out", "--json"])
            .assert_exit(9);
        assert_contains(&out.stderr, why);
        assert_contains(&out.stderr, "skills/get gave no newer entry");
        assert_contains(&out.stderr, "\"code\":\"integrity\"");
        assert_eq!(out.stdout, "", "{tamper}: something was printed");
        assert!(!dir.path("out").exists(), "{tamper}: something was saved");
        assert_eq!(
            log(&dir),
            format!("list\nread {MD_URI}\nget {MD_URI}\n"),
            "{tamper}"
        );
        // By URI likewise.
        std::fs::remove_file(dir.path("log")).unwrap();
        let out = get(&dir, MD_URI, &[]).assert_exit(9);
        assert_contains(&out.stderr, why);
        assert_eq!(out.stdout, "", "{tamper}");
        assert!(!log(&dir).contains(FORMS_URI), "{tamper}: {}", log(&dir));
    }
}

/// Updated and tampered at once: `skills/get` gives a newer entry, the
/// skill is read again, and its `SKILL.md` fails that entry too: exit 9,
/// after exactly one refresh.
#[test]
fn interop_skills_tampered_after_a_refresh_refused_with_exit_9() {
    let test = "interop_skills_tampered_refreshed";
    let args = ["--edit-after-list", "--tamper", "digest"];
    let Some(dir) = setup(test, &args, "auto", false) else { return };
    let out = get(&dir, "pdf-processing", &["--save", "out"]).assert_exit(9);
    assert_contains(&out.stderr, "skills/get gave a newer entry");
    assert_contains(&out.stderr, "against the newer entry too");
    assert!(!dir.path("out").exists(), "something was saved");
    assert_eq!(
        log(&dir),
        format!("list\nread {MD_URI}\nget {MD_URI}\nread {MD_URI}\n")
    );
}

/// The skill changes on the server between the listing and the read: the
/// listed digest no longer holds, `skills/get` gives the newer entry, and
/// the skill is verified against that one and saved as it now is.
#[test]
fn interop_skills_stale_entry_refreshed_by_skills_get() {
    let test = "interop_skills_stale_refreshed";
    let Some(dir) = setup(test, &["--edit-after-list"], "auto", false) else {
        return;
    };
    let out = get(&dir, "pdf-processing", &["--save", "out"]).assert_exit(0);
    assert_contains(&out.stderr, "skills/get gave a newer entry");
    assert_contains(&out.stderr, "verified; 2 file(s) saved");
    let now = format!("{}\nEdited after it was listed.\n", skill_md());
    assert_eq!(saved(&dir, "SKILL.md"), now);
    assert_eq!(
        log(&dir),
        format!(
            "list\nread {MD_URI}\nget {MD_URI}\nread {MD_URI}\nread \
             {FORMS_URI}\n"
        )
    );
}

/// Names are labels: the SDK catalog serves two skills named `refunds`
/// under different prefixes; by name the fetch is refused with both URIs
/// (exit 2), by URI each is fetched.
#[test]
fn interop_skills_same_name_told_apart_by_uri() {
    let test = "interop_skills_same_name";
    let Some(dir) = setup(test, &["--catalog"], "auto", false) else {
        return;
    };
    for (prefix, body) in [("acme", "Billing"), ("support", "Support")] {
        dir.write(
            format!("root/{prefix}/refunds/SKILL.md"),
            format!(
                "---\nname: refunds\ndescription: {body} refunds\n---\n\n\
                 {body} body.\n"
            ),
        );
    }
    // Listed apart: a shared name is shown as the URIs.
    let out = run_allowed(&dir, "sk", &["skills"]).assert_exit(0);
    assert_contains(&out.stdout, "Billing refunds");
    assert_contains(&out.stdout, "Support refunds");
    assert_contains(&out.stdout, "skill://acme/refunds/SKILL.md");
    assert_contains(&out.stdout, "skill://support/refunds/SKILL.md");
    assert_contains(&out.stdout, "pdf-processing ");

    let out = get(&dir, "refunds", &[]).assert_exit(2);
    assert_contains(&out.stderr, "lists 2 skills named 'refunds'");
    assert_contains(&out.stderr, "skill://acme/refunds/SKILL.md");
    assert_contains(&out.stderr, "skill://support/refunds/SKILL.md");
    assert_eq!(out.stdout, "");

    let out =
        get(&dir, "skill://support/refunds/SKILL.md", &[]).assert_exit(0);
    assert_contains(&out.stdout, "Support body.");
    assert!(!out.stdout.contains("Billing"), "{}", out.stdout);
}
