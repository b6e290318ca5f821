//! Tidy: the invariants DESIGN.md states ("Invariants, checked"), checked
//! over the source tree, after rust-analyzer's tidy test. Each check is a
//! function of text, so that a planted violation of each is shown to fail
//! (the `planted_*` tests) before the real tree is checked.
//!
//! - No MCP method name is spelled outside the protocol crate's `mcp`
//!   module (tests excepted: they speak as servers).
//! - Every source file opens with a `//!` module doc.
//! - The protocol crate depends on no I/O crate and its code touches no
//!   file, socket, process, thread, clock or environment.
//! - Nothing below `cmd/` imports `cli` (only `cli/`, `cmd/`, `lib.rs` and
//!   `setup.rs` do).

use std::fs;
use std::path::{Path, PathBuf};

/// The repository root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file below `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The production part of a source file: everything before its test
/// module (`#[cfg(test)]` followed by `mod`).
fn production(text: &str) -> &str {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.trim() == "#[cfg(test)]" {
            let rest = &text[at + line.len()..];
            if rest.trim_start().starts_with("mod ") {
                return &text[..at];
            }
        }
        at += line.len();
    }
    text
}

/// String literals in `text` that spell an MCP method name, with their
/// line numbers. A method name is `initialize`, `ping`, or a
/// `family/name` path of MCP's request and notification families.
fn method_literals(text: &str) -> Vec<(usize, String)> {
    const FAMILIES: &[&str] = &[
        "notifications/",
        "tools/",
        "resources/",
        "prompts/",
        "tasks/",
        "sampling/",
        "elicitation/",
        "roots/",
        "logging/",
        "completion/",
        "server/",
        "skills/",
    ];
    let mut found = vec![];
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut parts = code.split('"');
        parts.next();
        // Every odd part is inside a literal (escaped quotes are rare
        // enough in this code base not to matter for this check).
        while let Some(lit) = parts.next() {
            let is_method = lit == "initialize"
                || lit == "ping"
                || FAMILIES.iter().any(|f| {
                    lit.starts_with(f)
                        && lit.len() > f.len()
                        && lit.bytes().all(|b| {
                            b.is_ascii_alphanumeric() || b"/_".contains(&b)
                        })
                });
            if is_method {
                found.push((n + 1, lit.to_owned()));
            }
            parts.next();
        }
    }
    found
}

/// Whether a source file opens with a `//!` module doc (blank lines and
/// attributes may come first).
fn has_module_doc(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("#!["))
        .is_some_and(|l| l.starts_with("//!"))
}

/// The crates a `Cargo.toml` lists under `[dependencies]`.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut out = vec![];
    let mut inside = false;
    for line in manifest.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            inside = l == "[dependencies]";
            continue;
        }
        if let Some((name, _)) = l.split_once('=')
            && inside
            && !l.starts_with('#')
        {
            out.push(name.trim().to_owned());
        }
    }
    out
}

/// The crates the protocol crate may depend on: values, not I/O.
const PURE_CRATES: &[&str] = &["serde_json", "base64"];

/// Paths in production code that mean I/O, threads, clocks or the
/// environment.
const IO_PATHS: &[&str] = &[
    "std::fs",
    "std::net::Tcp",
    "std::net::Udp",
    "std::os::",
    "std::process",
    "std::thread",
    "std::env",
    "Instant::now",
    "SystemTime",
    "std::io::stdin",
    "std::io::stdout",
    "std::io::stderr",
    "println!",
    "eprintln!",
    "unsafe ",
];

/// The I/O paths `text`'s production part uses.
fn io_uses(text: &str) -> Vec<&'static str> {
    let code = production(text);
    IO_PATHS.iter().copied().filter(|p| code.contains(p)).collect()
}

fn relative(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

#[test]
fn planted_method_literal_is_found() {
    let text = "//! x\nfn f() { s.request(\"tools/call\", v) }\n";
    assert_eq!(method_literals(text), vec![(2, "tools/call".to_owned())]);
    let notif = "let m = \"notifications/tools/list_changed\";";
    assert_eq!(method_literals(notif).len(), 1);
    assert_eq!(method_literals("let m = \"initialize\";").len(), 1);
    // Prose, paths and comments are not methods.
    let clean = "let a = \"tools/ call\"; // \"tools/call\"\n\
                 let b = \"the tools/list answer\"; let c = \"tools/\";";
    assert!(method_literals(clean).is_empty(), "{:?}", method_literals(clean));
    // A test module may spell them.
    let tested = "fn f() {}\n#[cfg(test)]\nmod tests { \"tools/call\" }\n";
    assert!(method_literals(production(tested)).is_empty());
}

#[test]
fn planted_missing_module_doc_is_found() {
    assert!(!has_module_doc("use std::fs;\n//! late\n"));
    assert!(!has_module_doc("/// item doc\nfn f() {}\n"));
    assert!(has_module_doc("\n//! A module.\nuse std::fs;\n"));
    assert!(has_module_doc("#![no_main]\n//! A target.\n"));
}

#[test]
fn planted_io_dependency_is_found() {
    let manifest = "[package]\nname = \"p\"\n[dependencies]\n\
                    serde_json = \"1\"\nureq = \"3\"\n\
                    [dev-dependencies]\nhttp = \"1\"\n";
    assert_eq!(dependencies(manifest), ["serde_json", "ureq"]);
    let code = "//! x\nuse std::fs;\nfn f() { std::thread::spawn(|| ()); }\n\
                #[cfg(test)]\nmod tests { use std::process; }\n";
    assert_eq!(io_uses(code), ["std::fs", "std::thread"]);
}

#[test]
fn no_method_literal_outside_the_protocol_module() {
    let r = root();
    let allowed = r.join("crates/proto/src/mcp");
    let mut bad = vec![];
    for dir in ["src", "crates/proto/src"] {
        for f in rust_files(&r.join(dir)) {
            if f.starts_with(&allowed) {
                continue;
            }
            let text = fs::read_to_string(&f).unwrap();
            for (line, lit) in method_literals(production(&text)) {
                bad.push(format!("{}:{line}: \"{lit}\"", relative(&f)));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "MCP method names belong in crates/proto/src/mcp (mcp::method):\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_source_file_has_a_module_doc() {
    let r = root();
    let mut bad = vec![];
    for dir in
        ["src", "crates/proto/src", "tests", "fixtures", "fuzz/fuzz_targets"]
    {
        for f in rust_files(&r.join(dir)) {
            let text = fs::read_to_string(&f).unwrap();
            if !has_module_doc(&text) {
                bad.push(relative(&f));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "files without a //! module doc:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_protocol_crate_does_no_io() {
    let r = root();
    let manifest =
        fs::read_to_string(r.join("crates/proto/Cargo.toml")).unwrap();
    let extra: Vec<_> = dependencies(&manifest)
        .into_iter()
        .filter(|d| !PURE_CRATES.contains(&d.as_str()))
        .collect();
    assert!(
        extra.is_empty(),
        "crates/proto may depend on {PURE_CRATES:?} only, not {extra:?}"
    );
    let mut bad = vec![];
    for f in rust_files(&r.join("crates/proto/src")) {
        let text = fs::read_to_string(&f).unwrap();
        for p in io_uses(&text) {
            bad.push(format!("{}: {p}", relative(&f)));
        }
    }
    assert!(bad.is_empty(), "I/O in the protocol crate:\n{}", bad.join("\n"));
    assert!(
        manifest.contains("unsafe_code = \"forbid\""),
        "crates/proto must forbid unsafe code"
    );
}

// The command line is the top floor: nothing below `cmd/` imports `cli`.
// (Appended in one block by the `cli` branch.)

/// Where `crate::cli` may be used: the command line itself, the commands,
/// the switchboard and the setup it does.
const CLI_USERS: &[&str] =
    &["src/cli/", "src/cmd/", "src/lib.rs", "src/setup.rs"];

/// The lines (1-based) of `text`'s production code that reach `cli`: a
/// path through the identifier `cli` (`crate::cli::X`, `cli::X` after
/// `use crate::cli`) or `cli` in a `use crate::{…}` list.
fn cli_uses(text: &str) -> Vec<usize> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    production(text)
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            let code = l.split("//").next().unwrap_or("");
            let in_use_list = code.trim_start().starts_with("use crate::{");
            code.match_indices("cli").any(|(i, _)| {
                let before = code[..i].chars().next_back();
                let after = &code[i + 3..];
                !before.is_some_and(ident)
                    && !after.starts_with(ident)
                    && (after.trim_start().starts_with("::") || in_use_list)
            })
        })
        .map(|(n, _)| n + 1)
        .collect()
}

#[test]
fn planted_cli_import_is_found() {
    let text = "//! x\nuse crate::cli::Show;\nfn f(g: &crate::cli::Global) {}\n\
                // crate::cli in a comment\nuse crate::{ask, cli};\n\
                fn g(o: cli::Opt) {}\n\
                #[cfg(test)]\nmod tests { use crate::cli; }\n";
    assert_eq!(cli_uses(text), [2, 3, 5, 6]);
    let clean = "//! x\nuse crate::catalog::Show;\nlet client = 1;\n\
                 use crate::{clients, ask};\nfn f(x: my_cli::A) {}\n";
    assert!(cli_uses(clean).is_empty(), "{:?}", cli_uses(clean));
}

#[test]
fn nothing_below_cmd_imports_cli() {
    let r = root();
    let mut bad = vec![];
    for f in rust_files(&r.join("src")) {
        let rel = relative(&f);
        if CLI_USERS.iter().any(|u| rel.starts_with(u)) {
            continue;
        }
        let text = fs::read_to_string(&f).unwrap();
        for n in cli_uses(&text) {
            bad.push(format!("{rel}:{n}"));
        }
    }
    assert!(bad.is_empty(), "cli imported below cmd/:\n{}", bad.join("\n"));
}
