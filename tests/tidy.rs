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
//! - No production function is over 120 lines without a
//!   `// Long on purpose:` reason above it.
//! - Every issue CHANGELOG.md refers to (`[#N]`) has its link (a URL).

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

// No production function over 120 lines without a written reason.
// (Appended in one block by the `func` branch.)

/// The longest a production function may be, in lines from its `fn` line
/// to its closing brace, without a `// Long on purpose:` comment above it.
const MAX_FN_LINES: usize = 120;

/// The comment that lets a function be longer, with its reason after it.
const LONG_ON_PURPOSE: &str = "// Long on purpose:";

/// The name of the function a line declares, if it does: `fn name` after
/// nothing but qualifiers (`pub`, `pub(crate)`, `const`, `unsafe`,
/// `async`, `extern "C"`).
fn declared_fn(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    loop {
        let word = rest.split(|c: char| c.is_whitespace()).next()?;
        if word == "fn" {
            let name = rest[2..].trim_start();
            let end = name
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(name.len());
            return (end > 0).then(|| &name[..end]);
        }
        let qualifier = word.starts_with("pub")
            || ["const", "unsafe", "async", "extern", "\"C\""].contains(&word);
        if !qualifier {
            return None;
        }
        rest = rest[word.len()..].trim_start();
    }
}

/// `text` with comments, string and character literals blanked out
/// (newlines kept), so that the braces left are the code's own.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let end = match (b[i], b.get(i + 1).copied()) {
            ('/', Some('/')) => b[i..]
                .iter()
                .position(|&x| x == '\n')
                .map_or(b.len(), |p| i + p),
            ('/', Some('*')) => block_comment_end(&b, i),
            ('"', _) => string_end(&b, i),
            ('\'', _) => char_end(&b, i).unwrap_or(i),
            _ => raw_string_end(&b, i).unwrap_or(i),
        };
        if end == i {
            out.push(b[i]);
            i += 1;
            continue;
        }
        for &x in &b[i..end] {
            out.push(if x == '\n' { '\n' } else { ' ' });
        }
        i = end;
    }
    out
}

/// One past the end of the (nested) block comment that starts at `i`.
fn block_comment_end(b: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            ('/', Some('*')) => (depth, i) = (depth + 1, i + 2),
            ('*', Some('/')) => {
                (depth, i) = (depth - 1, i + 2);
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    b.len()
}

/// One past the end of the string literal whose `"` is at `i`.
fn string_end(b: &[char], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() && b[j] != '"' {
        j += if b[j] == '\\' { 2 } else { 1 };
    }
    (j + 1).min(b.len())
}

/// One past the end of the character literal (`'x'`, `'\n'`,
/// `'\u{7f}'`) whose `'` is at `i`; `None` for a lifetime.
fn char_end(b: &[char], i: usize) -> Option<usize> {
    if b.get(i + 1) == Some(&'\\') {
        // The escaped character is at i + 2: the closing quote is after.
        let rest = b.get(i + 3..)?;
        rest.iter().position(|&x| x == '\'').map(|p| i + 4 + p)
    } else {
        (b.get(i + 2) == Some(&'\'')).then_some(i + 3)
    }
}

/// One past the end of the raw string (`r"…"`, `r#"…"#`, `br"…"`) that
/// starts at `i`, if one does.
fn raw_string_end(b: &[char], i: usize) -> Option<usize> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    if i > 0 && ident(b[i - 1]) {
        return None;
    }
    let s = match (b[i], b.get(i + 1)) {
        ('r', _) => i + 1,
        ('b', Some('r')) => i + 2,
        _ => return None,
    };
    let hashes = b[s..].iter().take_while(|&&x| x == '#').count();
    if b.get(s + hashes) != Some(&'"') {
        return None;
    }
    let close: Vec<char> =
        std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
    let mut j = s + hashes + 1;
    while j < b.len() && !b[j..].starts_with(&close) {
        j += 1;
    }
    Some((j + close.len()).min(b.len()))
}

/// The functions of `text`'s production part: name, first line (1-based)
/// and length in lines from the `fn` line to its closing brace.
/// Declarations without a body (`fn f();` in a trait) are not functions.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let code = code_only(production(text));
    let lines: Vec<&str> = code.lines().collect();
    let mut found = vec![];
    for (n, line) in lines.iter().enumerate() {
        let Some(name) = declared_fn(line) else { continue };
        let mut depth = 0usize;
        let mut opened = false;
        let mut in_sig = 0isize; // parentheses, brackets, angles in the signature
        'scan: for (m, l) in lines.iter().enumerate().skip(n) {
            let from = if m == n { l.find("fn").unwrap_or(0) } else { 0 };
            for ch in l[from..].chars() {
                match ch {
                    '(' | '[' if !opened => in_sig += 1,
                    ')' | ']' if !opened => in_sig -= 1,
                    ';' if !opened && in_sig == 0 => break 'scan,
                    '{' => {
                        opened = true;
                        depth += 1;
                    }
                    '}' if opened => {
                        depth -= 1;
                        if depth == 0 {
                            found.push((name.to_owned(), n + 1, m - n + 1));
                            break 'scan;
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    found
}

/// Whether the comment block, doc comment and attributes right above line
/// `at` (0-based) of `text` hold the `// Long on purpose:` comment.
fn long_on_purpose(text: &str, at: usize) -> bool {
    let lines: Vec<&str> = text.lines().take(at).collect();
    lines
        .into_iter()
        .rev()
        .map(str::trim)
        .take_while(|l| l.starts_with("//") || l.starts_with("#["))
        .any(|l| l.starts_with(LONG_ON_PURPOSE))
}

/// The functions of `text` over `MAX_FN_LINES` without a reason: name,
/// line, length.
fn long_functions(text: &str) -> Vec<(String, usize, usize)> {
    functions(text)
        .into_iter()
        .filter(|(_, at, len)| {
            *len > MAX_FN_LINES && !long_on_purpose(text, at - 1)
        })
        .collect()
}

#[test]
fn planted_long_function_is_found() {
    let body = |n: usize| "    x += 1;\n".repeat(n);
    // 119 body lines plus the `fn` line and the closing brace: 121.
    let long = format!("//! x\n/// Doc.\nfn long() {{\n{}}}\n", body(119));
    assert_eq!(long_functions(&long), [("long".to_owned(), 3, 121)]);
    let fits = format!("//! x\npub(crate) fn fits() {{\n{}}}\n", body(118));
    assert!(long_functions(&fits).is_empty());
    // Braces in strings, characters and comments are not the code's.
    let tricky = format!(
        "//! x\nfn tricky<'a>(s: &'a str, b: [u8; 4]) {{\n    let _ = \"}}\";\n    \
         let _ = ('}}', '\\'', '\\u{{7f}}');\n    let _ = r#\"}}\"\"#; // }}\n    /* }} */\n{}}}\n",
        body(116)
    );
    assert_eq!(long_functions(&tricky), [("tricky".to_owned(), 2, 122)]);
    // A reason above it (doc and attributes may sit between) lets it be.
    let kept = format!(
        "//! x\n// Long on purpose: one arm per command.\n/// Doc.\n\
         #[allow(dead_code)]\nfn kept() {{\n{}}}\n",
        body(130)
    );
    assert!(long_functions(&kept).is_empty());
    // A reason further up, for another item, does not.
    let far = format!(
        "//! x\n// Long on purpose: x.\nconst A: u8 = 1;\nfn far() {{\n{}}}\n",
        body(130)
    );
    assert_eq!(long_functions(&far).len(), 1);
    // Nested functions are measured too; bodiless declarations are not;
    // a test module may be long.
    let nested = format!(
        "//! x\ntrait T {{ fn f(&self); }}\nfn outer() {{\n    fn inner() {{\n{}    }}\n}}\n\
         #[cfg(test)]\nmod tests {{\n    fn t() {{\n{}    }}\n}}\n",
        body(125),
        body(200)
    );
    let names: Vec<_> =
        long_functions(&nested).into_iter().map(|f| f.0).collect();
    assert_eq!(names, ["outer", "inner"]);
}

#[test]
fn no_long_function_without_a_reason() {
    let r = root();
    let mut bad = vec![];
    for dir in ["src", "crates/proto/src"] {
        for f in rust_files(&r.join(dir)) {
            let text = fs::read_to_string(&f).unwrap();
            for (name, line, len) in long_functions(&text) {
                bad.push(format!(
                    "{}:{line}: {name} ({len} lines)",
                    relative(&f)
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "functions over {MAX_FN_LINES} lines: split them by concern, or write \
         the reason above them as `{LONG_ON_PURPOSE} ...`:\n{}",
        bad.join("\n")
    );
}

/// The issue references of a changelog (`[#N]` not followed by `:`)
/// that no `[#N]: https://…` line defines.
fn undefined_issue_links(text: &str) -> Vec<String> {
    let mut used = vec![];
    let mut defined = vec![];
    for (i, _) in text.match_indices("[#") {
        let rest = &text[i + 2..];
        let digits: String =
            rest.chars().take_while(char::is_ascii_digit).collect();
        let after = &rest[digits.len()..];
        if digits.is_empty() || !after.starts_with(']') {
            continue;
        }
        let at_line_start = i == 0 || text[..i].ends_with('\n');
        if at_line_start && after.starts_with("]: https://") {
            defined.push(digits);
        } else if !after.starts_with("]:") {
            used.push(digits);
        }
    }
    used.sort();
    used.dedup();
    used.retain(|n| !defined.contains(n));
    used
}

#[test]
fn planted_undefined_issue_link_is_found() {
    let text = "- A fix. ([#3], [#4])\n\n[#3]: https://example.com/issues/3\n";
    assert_eq!(undefined_issue_links(text), ["4"]);
    assert!(undefined_issue_links("[#3]\n[#3]: https://x/3\n").is_empty());
    assert_eq!(undefined_issue_links("[#3]\n[#3]: ../3\n"), ["3"]);
}

#[test]
fn every_changelog_issue_reference_has_its_link() {
    let text = fs::read_to_string(root().join("CHANGELOG.md")).unwrap();
    let missing = undefined_issue_links(&text);
    assert!(
        missing.is_empty(),
        "CHANGELOG.md refers to issues with no `[#N]: https://...` line: {}",
        missing.join(", ")
    );
}
