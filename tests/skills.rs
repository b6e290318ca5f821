//! Skills (SEP-2640) through the binary, against
//! `fixtures/skills/skills_server.py`, a stdio server that follows the
//! SEP's text and can serve tampered files, and against fastmcp 4.1.6, a
//! real server of the extension (`fixtures/skills/fastmcp_skills.py`).
//! Both run on the interop Python (`.interop/venv`), so these tests need
//! what the interop tests need.
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

    // By URI: skills/get gives the entry; a URI not served is its -32602.
    let uri = "skill://pdf-processing/SKILL.md";
    let out =
        run_allowed(&dir, "sk", &["skill", "get", "sk", uri]).assert_exit(0);
    assert_contains(&out.stdout, "Skill body, edition 1.");
    let out = run_allowed(
        &dir,
        "sk",
        &["skill", "get", "sk", "skill://nope/SKILL.md"],
    )
    .assert_exit(2);
    assert_contains(&out.stderr, "serves no skill at skill://nope/SKILL.md");
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

/// fastmcp 4.1.6 (the interop venv) serves SEP-2640 skills over the
/// 2026-07-28 wire (`fixtures/skills/fastmcp_skills.py`, skills from a
/// directory) and a tool with an MCP Apps UI resource: a real peer for
/// both. Listed, fetched verified and saved; locked, and a skill edited on
/// the server's side is drift; the tool's `ui://` resource is marked by
/// `list` and saved by `read --save`, never rendered.
#[test]
fn interop_skills_and_apps_with_fastmcp() {
    const SERVER: &str = "fixtures/skills/fastmcp_skills.py";
    let test = "interop_skills_and_apps_with_fastmcp";
    let Some(s) = installed(test, &[SERVER]) else { return };
    let dir = Dir::new(test);
    let src = crate::util::repo_root().join("fixtures/skills/skills-root");
    let root = dir.create_dir("root/pdf-processing/references");
    let skill_md =
        std::fs::read_to_string(src.join("pdf-processing/SKILL.md")).unwrap();
    let forms = std::fs::read_to_string(
        src.join("pdf-processing/references/FORMS.md"),
    )
    .unwrap();
    dir.write("root/pdf-processing/SKILL.md", &skill_md);
    std::fs::write(root.join("FORMS.md"), &forms).unwrap();
    let args = json!([
        crate::util::repo_root().join(SERVER),
        "--root",
        dir.path("root")
    ]);
    write_mcp_json(
        &dir,
        &[(
            "fm",
            json!({"command": s.python, "args": args, "protocol": "modern"}),
        )],
    );

    let out = run_allowed(&dir, "fm", &["skills"]).assert_exit(0);
    assert_contains(&out.stdout, "pdf-processing");
    let out = run_allowed(
        &dir,
        "fm",
        &["skill", "get", "fm", "pdf-processing", "--save", "out"],
    )
    .assert_exit(0);
    assert_contains(&out.stderr, "verified; 2 file(s) saved");
    assert_eq!(
        std::fs::read_to_string(dir.path("out/pdf-processing/SKILL.md"))
            .unwrap(),
        skill_md
    );
    // By URI, through fastmcp's skills/get.
    let out = run_allowed(
        &dir,
        "fm",
        &["skill", "get", "fm", "skill://pdf-processing/SKILL.md"],
    )
    .assert_exit(0);
    assert_eq!(out.stdout.trim_end(), skill_md.trim_end());
    assert_eq!(
        std::fs::read_to_string(
            dir.path("out/pdf-processing/references/FORMS.md")
        )
        .unwrap(),
        forms
    );

    // MCP Apps: marked, and saved on request.
    let out = run_allowed(&dir, "fm", &["list"]).assert_exit(0);
    assert_contains(&out.stdout, "ui: ui://clock/app.html (MCP App)");
    let out = run_allowed(&dir, "fm", &["list", "--json"]).assert_exit(0);
    let tools = &out.stdout_json()["servers"][0]["tools"];
    assert_eq!(tools[0]["ui_resource"], json!("ui://clock/app.html"));
    run_allowed(
        &dir,
        "fm",
        &["read", "fm", "ui://clock/app.html", "--save", "ui"],
    )
    .assert_exit(0);
    assert_contains(
        &std::fs::read_to_string(dir.path("ui/app.html")).unwrap(),
        "<!doctype html>",
    );

    // Locked; the skill changed on the server's side is drift.
    run_allowed(&dir, "fm", &["lock"]).assert_exit(0);
    assert_contains(
        &std::fs::read_to_string(dir.path(".mcp.lock.json")).unwrap(),
        "\"skills\"",
    );
    run_allowed(&dir, "fm", &["lock", "--check"]).assert_exit(0);
    dir.write(
        "root/pdf-processing/SKILL.md",
        skill_md.replace("Skill body.", "Another body."),
    );
    let out = run_allowed(&dir, "fm", &["lock", "--check"]).assert_exit(1);
    assert_contains(&out.all(), "skill://pdf-processing/SKILL.md");
}
