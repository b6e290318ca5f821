//! Arguments that match what servers declare, against the fixture's
//! `--shaped-tools`: `key=value` typed through `anyOf`/`oneOf`, type lists,
//! local `$ref`s, `enum`, `const` and `allOf`; `key=@file` and
//! `key:=@file`; `\` escapes; names the schema does not list; `--args` as
//! the escape hatch; prompt arguments; the qualified name after the server.

use serde_json::{Value, json};

use crate::util::{
    Dir, TestCommand, call_arguments, fixture_server, received, run_allowed,
    write_mcp_json,
};

/// A directory with server `demo`: the fixture with `--shaped-tools`,
/// recording what it receives. Returns the record file too.
fn shaped(test: &str) -> (Dir, std::path::PathBuf) {
    let dir = Dir::new(test);
    let rec = dir.path("rec");
    let rec_arg = format!("--record={}", rec.display());
    let server = fixture_server(&["--shaped-tools", &rec_arg]);
    write_mcp_json(&dir, &[("demo", server)]);
    (dir, rec)
}

fn run(dir: &Dir, args: &[&str]) -> TestCommand {
    run_allowed(dir, "demo", args)
}

#[test]
fn values_follow_unions_refs_enums_consts_and_all_of() {
    let (dir, rec) = shaped("args_shapes");
    let out = run(
        &dir,
        &[
            "call",
            "demo",
            "shapes",
            r#"tags=["a","b"]"#,
            "limit=5",
            "level=2",
            "mode=fast",
            "unit=c",
            r#"opts={"deep":[1]}"#,
            "id=7",
            "note=42",
        ],
    )
    .assert_exit(0);
    let sent = json!({"tags": ["a", "b"], "limit": 5, "level": 2,
                      "mode": "fast", "unit": "c", "opts": {"deep": [1]},
                      "id": 7, "note": "42"});
    assert_eq!(call_arguments(&rec), std::slice::from_ref(&sent));
    // The tool's text is its arguments: printed once, exactly.
    assert_eq!(out.stdout, format!("{sent}\n"));
    assert_eq!(out.stderr, "");
    // null for the null branch; a string where only a string fits.
    run(&dir, &["call", "demo", "shapes", "level=1", "tags=null", "id=x"])
        .assert_exit(0);
    assert_eq!(
        call_arguments(&rec)[1],
        json!({"level": 1, "tags": null, "id": "x"})
    );
}

#[test]
fn the_most_specific_branch_wins_and_verbose_says_so() {
    let (dir, rec) = shaped("args_specific");
    let out = run(&dir, &["call", "demo", "shapes", "level=3", "id=7", "-v"])
        .assert_exit(0);
    assert_eq!(call_arguments(&rec), [json!({"level": 3, "id": 7})]);
    assert!(
        out.stderr.contains(
            "rivumi-mcp: server 'demo': argument 'id': '7' fits an integer \
             and a string; sent as an integer\n"
        ),
        "{}",
        out.stderr
    );
    // Without -v, nothing is said.
    let out = run(&dir, &["call", "demo", "shapes", "level=3", "id=7"])
        .assert_exit(0);
    assert_eq!(out.stderr, "");
}

#[test]
fn a_value_no_branch_takes_is_a_usage_error_before_the_call() {
    let (dir, rec) = shaped("args_no_fit");
    for (arg, says) in [
        ("level=4", "argument 'level': '4' is not one of 1, 2, 3"),
        ("tags=a,b", "argument 'tags': 'a,b' is not an array or null"),
        ("mode=slow", "argument 'mode': 'slow' is not the constant \"fast\""),
        ("unit=k", "argument 'unit': 'k' is not one of \"c\", \"f\""),
        ("limit=1.5", "'1.5' is not an integer or null"),
    ] {
        let first = if arg.starts_with("level=") { "id=1" } else { "level=1" };
        let out = run(&dir, &["call", "demo", "shapes", first, arg]).run();
        assert_eq!(out.code, Some(2), "{arg}: {out:?}");
        assert_eq!(out.stdout, "");
        assert!(
            out.stderr.starts_with("rivumi-mcp: server 'demo': ")
                && out.stderr.contains(says),
            "{arg}: {}",
            out.stderr
        );
    }
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn file_values_and_escapes() {
    let (dir, rec) = shaped("args_files");
    dir.write("note.txt", "line one\nline two\n");
    dir.write("tags.json", r#"["x", "y"]"#);
    run(
        &dir,
        &[
            "call",
            "demo",
            "shapes",
            "level=1",
            "note=@note.txt",
            "tags:=@tags.json",
            r"id=\@me",
        ],
    )
    .assert_exit(0);
    run(&dir, &["call", "demo", "shapes", "level=1", r"note=\=x"])
        .assert_exit(0);
    assert_eq!(
        call_arguments(&rec),
        [
            json!({"level": 1, "note": "line one\nline two\n",
                   "tags": ["x", "y"], "id": "@me"}),
            json!({"level": 1, "note": "=x"}),
        ]
    );
    // A file that is missing, not JSON, or not a regular file: usage,
    // naming the argument and the file.
    let out = run(&dir, &["call", "demo", "shapes", "level=1", "note=@nope"])
        .assert_exit(2);
    assert!(
        out.stderr.starts_with(
            "rivumi-mcp: server 'demo': argument 'note': nope: cannot open:"
        ),
        "{}",
        out.stderr
    );
    let out =
        run(&dir, &["call", "demo", "shapes", "level=1", "tags:=@note.txt"])
            .assert_exit(2);
    assert!(
        out.stderr.contains("argument 'tags': ':=' takes JSON (file): "),
        "{}",
        out.stderr
    );
    dir.create_dir("adir");
    let out = run(&dir, &["call", "demo", "shapes", "level=1", "note=@adir"])
        .assert_exit(2);
    assert!(out.stderr.contains("adir: not a regular file"), "{}", out.stderr);
    assert_eq!(call_arguments(&rec).len(), 2);
}

#[test]
fn unknown_argument_is_a_usage_error_unless_args_passes_it() {
    let (dir, rec) = shaped("args_unknown");
    let out = run(&dir, &["call", "demo", "shapes", "level=1", "limt=5"])
        .assert_exit(2);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': unknown argument 'limt'; did you mean \
         'limit'? (--args passes any object as is)\n"
    );
    let out = run(&dir, &["call", "demo", "shapes", "level=1", "zzz=5"])
        .assert_exit(2);
    assert!(
        out.stderr.contains(
            "unknown argument 'zzz' (it takes: id, level, limit, mode, \
             note, opts, tags, unit)"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
    // --args is passed untouched, and words on top of it are checked.
    run(
        &dir,
        &["call", "demo", "shapes", "--args", r#"{"level": 1, "limt": "5"}"#],
    )
    .assert_exit(0);
    assert_eq!(call_arguments(&rec), [json!({"level": 1, "limt": "5"})]);
    // A schema without `properties` lists no names and refuses none.
    run(&dir, &["call", "-y", "demo", "delete_all", "any=1"]).assert_exit(0);
    assert_eq!(call_arguments(&rec)[1], json!({"any": "1"}));
}

#[test]
fn qualified_name_after_the_server_name() {
    let (dir, rec) = shaped("args_qualified_after_server");
    let out = run(&dir, &["call", "demo", "mcp__demo__echo", "text=hi"])
        .assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    let out = run(&dir, &["call", "-y", "demo", "mcp__demo__odd_name_"])
        .assert_exit(0);
    assert_eq!(out.stdout, "odd\n");
    let names: Vec<Value> = received(&rec, "tools/call")
        .iter()
        .map(|c| c["name"].clone())
        .collect();
    assert_eq!(names, [json!("echo"), json!("odd name!")]);
    // Another server's qualified name is not this server's tool.
    let out = run(&dir, &["call", "demo", "mcp__other__echo", "text=hi"])
        .assert_exit(2);
    assert!(
        out.stderr.contains("no tool 'mcp__other__echo'"),
        "{}",
        out.stderr
    );
}

#[test]
fn prompt_takes_json_and_files_as_strings_and_checks_names() {
    let (dir, rec) = shaped("args_prompt");
    dir.write("style.txt", "formal");
    let out =
        run(&dir, &["prompt", "demo", "greet", "name:=5", "style=@style.txt"])
            .assert_exit(0);
    assert_eq!(
        out.stdout,
        "# Greet someone by name.\n[user]\nHello, 5! (style: formal)\n"
    );
    run(&dir, &["prompt", "demo", "greet", r#"name:={"a":[1]}"#])
        .assert_exit(0);
    let gets = received(&rec, "prompts/get");
    assert_eq!(
        gets,
        [
            json!({"name": "greet", "arguments": {"name": "5", "style": "formal"}}),
            json!({"name": "greet", "arguments": {"name": "{\"a\":[1]}"}}),
        ]
    );
    // Names the prompt does not declare, and missing required ones, are
    // refused before the request.
    let out =
        run(&dir, &["prompt", "demo", "greet", "nmae=Ann"]).assert_exit(2);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': unknown argument 'nmae'; did you mean \
         'name'?\n"
    );
    let out =
        run(&dir, &["prompt", "demo", "greet", "style=x"]).assert_exit(2);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': prompt 'greet' needs an argument: \
         missing name\n"
    );
    assert_eq!(received(&rec, "prompts/get").len(), 2);
}
