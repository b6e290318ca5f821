//! The reference `mcp-server-sqlite` (PyPI, on the Python SDK `mcp` 1.x
//! it needs; `.interop/real-venv`, installed by scripts/interop-setup.sh)
//! over stdio. It declares `resources` but answers
//! `resources/templates/list` with -32601 (issue 21, bug 1): `resources`,
//! `list --all`, `lock` and calls under the lock must all work.

use std::path::PathBuf;

use crate::util::interop::{SKIP_VAR, Turn, assert_no_leftovers};
use crate::util::{assert_absent, assert_contains, repo_root};

const SQLITE: &str = ".interop/real-venv/bin/mcp-server-sqlite";

/// The server's path, or `None` when it is missing and [`SKIP_VAR`] is 1.
fn sqlite(test: &str) -> Option<PathBuf> {
    let path = repo_root().join(SQLITE);
    if path.is_file() {
        return Some(path);
    }
    if std::env::var_os(SKIP_VAR).is_some_and(|v| v == "1") {
        eprintln!("{test}: SKIPPED ({SKIP_VAR}=1): {SQLITE} missing");
        return None;
    }
    panic!(
        "{test}: {SQLITE} is not installed. Run scripts/interop-setup.sh \
         first; set {SKIP_VAR}=1 to skip the interop tests."
    );
}

#[test]
fn interop_sqlite_lists_locks_and_calls_without_templates() {
    let test = "interop_sqlite";
    let Some(server) = sqlite(test) else { return };
    let t = Turn::take("interop", test);
    // The marker is in the database's path, so on the server's argv.
    let db = t.dir.path(format!("{}.db", t.marker));
    let entry = serde_json::json!({
        "command": server.to_str().unwrap(),
        "args": ["--db-path", db.to_str().unwrap()],
    });
    t.dir.write(
        ".mcp.json",
        format!("{{\"mcpServers\": {{\"sqlite\": {entry}}}}}"),
    );
    let none = String::new;
    let (out, _) = t.run("sqlite", &["resources", "sqlite"], 0, none);
    assert_contains(&out.stdout, "memo://insights");
    assert_absent(&out.stdout, "template");
    let (out, _) = t.run("sqlite", &["-v", "resources", "sqlite"], 0, none);
    assert_contains(
        &out.stderr,
        "server 'sqlite': resources/templates/list: not offered (-32601)",
    );
    let (out, _) = t.run("sqlite", &["list", "--all", "sqlite"], 0, none);
    for tool in ["read_query", "write_query", "create_table", "list_tables"] {
        assert_contains(&out.stdout, &format!("mcp__sqlite__{tool}"));
    }
    t.run("sqlite", &["lock"], 0, none);
    t.run("sqlite", &["lock", "sqlite"], 0, none);
    t.run("sqlite", &["lock", "--check"], 0, none);
    let calls: [&[&str]; 3] = [
        &["create_table", "query=CREATE TABLE t (x INTEGER)"],
        &["write_query", "query=INSERT INTO t VALUES (42)"],
        &["read_query", "query=SELECT x FROM t"],
    ];
    let mut last = String::new();
    for c in calls {
        let mut args = vec!["call", "-y", "sqlite"];
        args.extend_from_slice(c);
        let (out, _) = t.run("sqlite", &args, 0, none);
        last = out.stdout;
    }
    assert_contains(&last, "42");
    assert_no_leftovers(&t.marker, "the sqlite calls", test);
}
