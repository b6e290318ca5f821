//! Skills (SEP-2640) through the binary, against
//! `fixtures/skills/skills_server.py`, a stdio server that follows the
//! SEP's text (no real server implementing the extension was available;
//! see the fixture's docstring). It runs on the interop Python
//! (`.interop/venv`), so these tests need what the interop tests need.
//!
//! `skills` lists without fetching a file; `skill get` prints or saves a
//! verified skill; a tampered digest, size or frontmatter is refused with
//! exit 9 and nothing after `SKILL.md` is read; `lock` pins the skill and
//! `lock --check` reports a changed one as drift.

use serde_json::json;

use crate::util::interop::installed;
use crate::util::{Dir, assert_contains, run_allowed, write_mcp_json};

const FIXTURE: &str = "fixtures/skills/skills_server.py";

/// A directory whose `.mcp.json` has the server `sk` (the fixture with
/// `extra` arguments, recording its reads in `reads`).
fn setup(test: &str, extra: &[&str]) -> Option<Dir> {
    let s = installed(test, &[FIXTURE])?;
    let dir = Dir::new(test);
    let mut args = vec![
        json!(crate::util::repo_root().join(FIXTURE)),
        json!("--reads"),
        json!(dir.path("reads")),
    ];
    args.extend(extra.iter().map(|a| json!(a)));
    write_mcp_json(
        &dir,
        &[("sk", json!({"command": s.python, "args": args}))],
    );
    Some(dir)
}

fn reads(dir: &Dir) -> String {
    std::fs::read_to_string(dir.path("reads")).unwrap_or_default()
}

#[test]
fn skills_are_listed_without_fetching_and_fetched_verified() {
    let Some(dir) = setup("skills_listed_fetched", &[]) else { return };
    let out = run_allowed(&dir, "sk", &["skills"]).assert_exit(0);
    assert_contains(&out.stdout, "pdf-processing");
    assert_contains(&out.stdout, "1.1");
    assert_contains(&out.stdout, "sha256:");
    assert_eq!(reads(&dir), "", "listing fetched a file");

    let out =
        run_allowed(&dir, "sk", &["skills", "sk", "--json"]).assert_exit(0);
    let v = out.stdout_json();
    let k = &v["servers"][0]["skills"][0];
    assert_eq!(k["name"], json!("pdf-processing"));
    assert_eq!(k["files"].as_array().unwrap().len(), 2);

    let out =
        run_allowed(&dir, "sk", &["skill", "get", "sk", "pdf-processing"])
            .assert_exit(0);
    assert_contains(&out.stdout, "Skill body, edition 1.");
    assert_contains(
        &reads(&dir),
        "skill://pdf-processing/references/FORMS.md",
    );

    let out = run_allowed(
        &dir,
        "sk",
        &["skill", "get", "sk", "pdf-processing", "--save", "out"],
    )
    .assert_exit(0);
    assert_eq!(out.stdout, "");
    let forms = dir.path("out/pdf-processing/references/FORMS.md");
    assert_eq!(
        std::fs::read_to_string(forms).unwrap(),
        "# Forms\n\nHow to fill forms.\n"
    );
    assert!(dir.path("out/pdf-processing/SKILL.md").is_file());
    // Never overwriting.
    run_allowed(
        &dir,
        "sk",
        &["skill", "get", "sk", "pdf-processing", "--save", "out"],
    )
    .assert_exit(2);

    let out = run_allowed(&dir, "sk", &["skill", "get", "sk", "nope"])
        .assert_exit(2);
    assert_contains(&out.stderr, "lists no skill 'nope'");
}

#[test]
fn a_tampered_skill_is_refused_with_exit_9() {
    for (tamper, why) in [
        ("digest", "its SHA-256 differs from its entry's digest"),
        ("size", "bytes, but its entry lists"),
        (
            "frontmatter",
            "its frontmatter differs from its entry's: field 'description'",
        ),
    ] {
        let test = format!("skills_tampered_{tamper}");
        let Some(dir) = setup(&test, &["--tamper", tamper]) else { return };
        let out = run_allowed(
            &dir,
            "sk",
            &[
                "skill",
                "get",
                "sk",
                "pdf-processing",
                "--save",
                "out",
                "--json",
            ],
        )
        .assert_exit(9);
        assert_contains(&out.stderr, why);
        assert_contains(&out.stderr, "\"code\":\"integrity\"");
        assert_eq!(out.stdout, "", "{tamper}: something was printed");
        assert!(!dir.path("out").exists(), "{tamper}: something was saved");
        // SKILL.md was read and refused; no other file was fetched.
        assert_eq!(
            reads(&dir),
            "skill://pdf-processing/SKILL.md\n",
            "{tamper}"
        );
    }
}

#[test]
fn lock_pins_skills_and_check_reports_drift() {
    let Some(dir) = setup("skills_lock", &[]) else { return };
    // The edition comes from a file, so that the launch stays the same.
    dir.write("edition", "1");
    let edition = dir.path("edition");
    let s = installed("skills_lock", &[FIXTURE]).unwrap();
    let args = json!([
        crate::util::repo_root().join(FIXTURE),
        "--edition-file",
        edition
    ]);
    write_mcp_json(
        &dir,
        &[("sk", json!({"command": s.python, "args": args}))],
    );
    run_allowed(&dir, "sk", &["lock"]).assert_exit(0);
    let lock = std::fs::read_to_string(dir.path(".mcp.lock.json")).unwrap();
    assert_contains(&lock, "\"skills\"");
    assert_contains(&lock, "skill://pdf-processing/SKILL.md");
    run_allowed(&dir, "sk", &["lock", "--check"]).assert_exit(0);
    dir.write("edition", "2");
    let out = run_allowed(&dir, "sk", &["lock", "--check"]).assert_exit(1);
    assert_contains(&out.all(), "skill");
    assert_contains(&out.all(), "skill://pdf-processing/SKILL.md");
}
