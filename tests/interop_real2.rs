//! The rest of the second trial's real servers (issue 21, round two),
//! over stdio, installed by scripts/interop-setup.sh, each used as a new
//! user would: `list`, the one-tool view `list SERVER TOOL`, and one call
//! that does something observable in the test's directory, approved by
//! name (`--approve`), never with `--yes`:
//!
//! - `mcp-shell-server` (PyPI; `.interop/real2-venv`): runs an allowed
//!   command (`ALLOW_COMMANDS`), refuses another.
//! - desktop-commander (npm; `.interop/real2-node`): writes and reads a file
//!   inside its allowed directory, refuses one outside. Telemetry is off and
//!   its feature flags point at a closed loopback port; a placeholder in its
//!   browser cache keeps it from downloading Chrome at start-up.
//! - `@modelcontextprotocol/server-pdf` (TS SDK v2; `.interop/real2-node`):
//!   lists and reads a small PDF the test writes, in the directory it is
//!   given (never the sample paper on the network it loads by default).
//! - `@eslint/mcp` (`.interop/real2-node`): lints a file with deliberate
//!   errors; the result names them.
//!
//! And the README's quick start, run verbatim in a pipe
//! ([`interop_readme_quick_start`]), its `npx` resolving the pinned
//! package offline from `.interop/npx-cache`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::util::interop::{
    ServerProcess, Turn, assert_no_leftovers, installed_at,
};
use crate::util::{Output, assert_absent, assert_contains, bin, repo_root};

const SHELL_SERVER: &str = ".interop/real2-venv/bin/mcp-shell-server";
const NODE_MODULES: &str = ".interop/real2-node/node_modules";
const DESKTOP_COMMANDER: &str =
    "@wonderwhy-er/desktop-commander/dist/index.js";
const SERVER_PDF: &str = "@modelcontextprotocol/server-pdf/dist/index.js";
const ESLINT_MCP: &str = "@eslint/mcp/src/mcp-cli.js";

/// Node servers load hundreds of modules at start: on a loaded machine a
/// command takes seconds of the server's own (desktop-commander alone
/// about 4 s here), so these get a longer limit than `LIMIT`.
const NODE_LIMIT: Duration = Duration::from_secs(30);

/// The installed node server `rel` under `.interop/real2-node`.
fn node_server(test: &str, rel: &str) -> Option<PathBuf> {
    installed_at(test, &format!("{NODE_MODULES}/{rel}"))
}

/// Writes `.mcp.json` with one server `name`.
fn config(t: &Turn, name: &str, entry: serde_json::Value) {
    let doc = json!({ "mcpServers": { name: entry } });
    t.dir.write(".mcp.json", doc.to_string());
}

/// `rivumi-mcp ARGS` allowed to start `allow`, expecting `code`, within
/// `limit`.
#[track_caller]
fn run(
    t: &Turn,
    allow: &str,
    args: &[&str],
    code: i32,
    limit: Duration,
) -> Output {
    let mut cmd = t.command(allow, args);
    cmd.timeout(limit * 2);
    t.run_within(&cmd, args, code, limit, String::new)
}

#[test]
fn interop_shell_server_runs_an_allowed_command() {
    let test = "interop_shell_server";
    let Some(server) = installed_at(test, SHELL_SERVER) else { return };
    let t = Turn::take("interop", test);
    let note = t.dir.write("note.txt", "a note the shell server reads\n");
    // The server reads no arguments: the marker is only on its argv.
    config(
        &t,
        "shell",
        json!({
            "command": server.to_str().unwrap(),
            "args": [t.marker],
            // Its description lists the commands from a Python set: a
            // fixed hash seed keeps the order, and so the lock, stable.
            "env": {"ALLOW_COMMANDS": "cat,echo", "PYTHONHASHSEED": "0"},
        }),
    );
    let limit = NODE_LIMIT;
    let out = run(&t, "shell", &["list", "shell"], 0, limit);
    assert_contains(&out.stdout, "mcp__shell__shell_execute  execute");
    assert_contains(&out.stdout, "(command: string[], directory?: string");
    let out = run(&t, "shell", &["list", "shell", "shell_execute"], 0, limit);
    let d = &out.stdout;
    // In the order of a Python set.
    let allowed =
        d.lines().find_map(|l| l.trim().strip_prefix("Allowed commands: "));
    let mut allowed: Vec<&str> =
        allowed.unwrap_or_default().split(", ").collect();
    allowed.sort_unstable();
    assert_eq!(allowed, ["cat", "echo"], "{d}");
    assert_contains(d, "  command: string[]  (required)\n");
    assert_contains(d, "--approve mcp__shell__shell_execute\n");
    // A required list's example holds one item (an empty one is refused).
    assert_contains(d, "shell_execute 'command:=[\"text\"]' --approve");
    // Pinned: the calls below run under the lock.
    run(&t, "shell", &["lock"], 0, limit);
    run(&t, "shell", &["lock", "--check"], 0, limit);
    let approve = ["--approve", "mcp__shell__shell_execute"];
    // The call: an allowed command, in the server's directory (the test's).
    let mut args = vec!["call", "shell", "shell_execute"];
    args.push(r#"command=["cat","note.txt"]"#);
    args.extend(approve);
    let out = run(&t, "shell", &args, 0, limit);
    assert_contains(&out.stdout, "a note the shell server reads");
    // Approval names the tool: another name approves nothing (exit 7).
    let args = [
        "call",
        "shell",
        "shell_execute",
        r#"command=["echo","x"]"#,
        "--approve",
        "mcp__shell__other",
    ];
    let out = run(&t, "shell", &args, 7, limit);
    assert_contains(&out.stderr, "--approve mcp__shell__shell_execute");
    // A command off the server's list is the server's refusal (exit 1).
    let mut args = vec!["call", "shell", "shell_execute"];
    args.push(r#"command=["rm","note.txt"]"#);
    args.extend(approve);
    let out = run(&t, "shell", &args, 1, limit);
    assert_contains(&out.stdout, "Command not allowed: rm");
    assert!(note.is_file(), "the refused command ran");
    assert_no_leftovers(&t.marker, "the shell calls", test);
}

#[test]
fn interop_desktop_commander_reads_and_writes_in_its_directory() {
    let test = "interop_desktop_commander";
    let Some(server) = node_server(test, DESKTOP_COMMANDER) else { return };
    let t = Turn::take("interop", test);
    let work = t.dir.create_dir(format!("work-{}", t.marker));
    t.dir.write(
        work.join("hello.txt"),
        "hello from the desktop-commander test\n",
    );
    let outside = t.dir.write("outside.txt", "not for the server\n");
    // Its configuration lives in $HOME (the test's): telemetry off, one
    // allowed directory; an empty file where its browser cache would hold
    // Chrome, so that it does not download one when it starts.
    let home = t.dir.path(".home/.claude-server-commander");
    t.dir.write(
        home.join("config.json"),
        json!({
            "telemetryEnabled": false,
            "allowedDirectories": [work.to_str().unwrap()],
        })
        .to_string(),
    );
    t.dir.write(
        home.join("puppeteer-cache/chrome/placeholder/chrome-linux64/chrome"),
        "",
    );
    config(
        &t,
        "dc",
        json!({
            "command": "node",
            "args": [server.to_str().unwrap(), "--no-onboarding", t.marker],
            "env": {
                "DESKTOP_COMMANDER_DISABLE_TELEMETRY": "1",
                // Port 9 on loopback: refused at once.
                "DC_FLAG_URL": "http://127.0.0.1:9/flags.json",
            },
        }),
    );
    let limit = NODE_LIMIT;
    let out = run(&t, "dc", &["list", "dc"], 0, limit);
    assert_contains(&out.stdout, "mcp__dc__read_file ");
    assert_contains(&out.stdout, "mcp__dc__write_file ");
    let out = run(&t, "dc", &["list", "dc", "read_file"], 0, limit);
    let d = &out.stdout;
    assert_contains(d, "mcp__dc__read_file  read\n");
    assert_contains(d, "  path: string  (required)\n");
    assert_contains(d, "  readOnlyHint: true\n");
    assert_contains(d, "example:\n  rivumi-mcp call dc read_file path=");
    // Writing is not read-only: approved by name.
    let path = work.join("written.txt");
    let arg = format!("path={}", path.display());
    let args = [
        "call",
        "dc",
        "write_file",
        &arg,
        "content=written through rivumi-mcp",
        "--approve",
        "mcp__dc__write_file",
    ];
    run(&t, "dc", &args, 0, limit);
    let got = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(got, "written through rivumi-mcp");
    // Reading is marked read-only; --approve for it is accepted all the same.
    let arg = format!("path={}", work.join("hello.txt").display());
    let args =
        ["call", "dc", "read_file", &arg, "--approve", "mcp__dc__read_file"];
    let out = run(&t, "dc", &args, 0, limit);
    assert_contains(&out.stdout, "hello from the desktop-commander test");
    // Outside its allowed directory: the server's refusal (exit 1).
    let arg = format!("path={}", outside.display());
    let args = ["call", "dc", "read_file", &arg];
    let out = run(&t, "dc", &args, 1, limit);
    assert_contains(&out.stdout, "Path not allowed");
    assert_absent(&out.stdout, "not for the server");
    assert_no_leftovers(&t.marker, "the desktop-commander calls", test);
}

/// A one-page PDF saying `text` (Helvetica, no compression), with a
/// correct cross-reference table.
fn tiny_pdf(text: &str) -> Vec<u8> {
    let stream = format!("BT /F1 12 Tf 20 50 Td ({text}) Tj ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents \
         4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_string(),
        format!("<< /Length {} >>\nstream\n{stream}\nendstream", stream.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
    ];
    let mut out = String::from("%PDF-1.4\n");
    let mut offsets = vec![];
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.push_str(&format!("{} 0 obj\n{o}\nendobj\n", i + 1));
    }
    let xref = out.len();
    out.push_str(&format!("xref\n0 {}\n", objects.len() + 1));
    out.push_str("0000000000 65535 f \n");
    for o in offsets {
        out.push_str(&format!("{o:010} 00000 n \n"));
    }
    out.push_str(&format!(
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        objects.len() + 1
    ));
    out.into_bytes()
}

#[test]
fn interop_server_pdf_lists_and_reads_a_local_pdf() {
    let test = "interop_server_pdf";
    let Some(server) = node_server(test, SERVER_PDF) else { return };
    let t = Turn::take("interop", test);
    // The marker is in the directory's name, so on the server's argv.
    let pdfs = t.dir.create_dir(format!("pdfs-{}", t.marker));
    let pdf = tiny_pdf("Hello loopback PDF");
    t.dir.write(pdfs.join("hello.pdf"), &pdf);
    config(
        &t,
        "pdf",
        json!({
            "command": "node",
            "args": [server.to_str().unwrap(), "--stdio", pdfs.to_str().unwrap()],
        }),
    );
    let limit = NODE_LIMIT;
    let out = run(&t, "pdf", &["list", "pdf"], 0, limit);
    assert_contains(&out.stdout, "mcp__pdf__list_pdfs ");
    assert_contains(&out.stdout, "ui: ui://pdf-viewer/mcp-app.html (MCP App)");
    // Most of its tools are its viewer's (`_meta.ui.visibility: ["app"]`).
    let l = &out.stdout;
    let tail = |tool: &str| {
        let at = l.find(&format!("mcp__pdf__{tool} ")).unwrap();
        let end =
            l[at + 1..].find("\n  mcp__").map_or(l.len(), |e| at + 1 + e);
        l[at..end].to_string()
    };
    const APP_ONLY: &str = "app only: for the server's MCP App to call";
    assert_contains(&tail("read_pdf_bytes"), APP_ONLY);
    assert_contains(&tail("save_pdf"), APP_ONLY);
    assert_absent(&tail("list_pdfs"), APP_ONLY);
    assert_absent(&tail("display_pdf"), APP_ONLY);
    let out = run(&t, "pdf", &["list", "--json", "pdf"], 0, limit);
    let tools = out.stdout_json()["servers"][0]["tools"].clone();
    let app_only: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["app_only"] == true)
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(app_only.len(), 6, "{app_only:?}");
    let out = run(&t, "pdf", &["list", "pdf", "read_pdf_bytes"], 0, limit);
    let d = &out.stdout;
    assert_contains(d, &format!("\n  {APP_ONLY}, not for a model\n"));
    assert_contains(d, "  url: string  (required)\n");
    assert_contains(d, "--approve mcp__pdf__read_pdf_bytes\n");
    // None of its tools is marked read-only: approved by name.
    let args =
        ["call", "pdf", "list_pdfs", "--approve", "mcp__pdf__list_pdfs"];
    let out = run(&t, "pdf", &args, 0, limit);
    let url = format!("file://{}", pdfs.join("hello.pdf").display());
    assert_contains(&out.stdout, &url);
    // The first bytes of the file, as the server reads them (base64).
    let arg = format!("url={url}");
    let args = [
        "call",
        "pdf",
        "read_pdf_bytes",
        &arg,
        "byteCount:=8",
        "--approve",
        "mcp__pdf__read_pdf_bytes",
        "--output",
        "structured",
    ];
    let out = run(&t, "pdf", &args, 0, limit);
    let v = out.stdout_json();
    assert_eq!(v["bytes"], "JVBERi0xLjQ=", "{v:#}"); // "%PDF-1.4"
    assert_eq!(v["totalBytes"], pdf.len(), "{v:#}");
    assert_eq!(v["hasMore"], true, "{v:#}");
    // Its MCP App is 4.3 MB of HTML, past the default --max-output (1 MiB):
    // saved, it is written whole, and nothing printed is cut (exit 0).
    let ui = "ui://pdf-viewer/mcp-app.html";
    let out = run(&t, "pdf", &["read", "pdf", ui, "--save", "ui"], 0, limit);
    assert_contains(&out.stdout, "saved to ui/mcp-app.html]");
    assert_eq!(out.stderr, "");
    let html = std::fs::read(t.dir.path("ui/mcp-app.html")).unwrap();
    assert!(html.len() > 1 << 20, "{} bytes", html.len());
    assert!(html.trim_ascii_end().ends_with(b"</html>"));
    // Built on the TS SDK v2 2.0.0, it speaks only the handshake era:
    // `--protocol modern` names the request it refused and what works.
    let args = ["--protocol", "modern", "list", "pdf"];
    let out = run(&t, "pdf", &args, 4, limit);
    assert_contains(
        &out.stderr,
        "server 'pdf': server/discover: server error",
    );
    assert_contains(&out.stderr, "try --protocol auto");
    assert_no_leftovers(&t.marker, "the pdf calls", test);
}

#[test]
fn interop_server_pdf_over_http_with_protocol_auto() {
    let test = "interop_server_pdf_over_http";
    let Some(server) = node_server(test, SERVER_PDF) else { return };
    let t = Turn::take("interop", test);
    let pdfs = t.dir.create_dir(format!("pdfs-{}", t.marker));
    t.dir.write(pdfs.join("hello.pdf"), tiny_pdf("Hello over HTTP"));
    // As shipped it binds 0.0.0.0 on $PORT: the preload binds 127.0.0.1
    // and prints the port it got.
    let mut cmd = t.dir.program("node");
    cmd.arg("--require")
        .arg(repo_root().join("fixtures/interop/loopback-only.cjs"))
        .arg(&server)
        .arg(&pdfs)
        .env("PORT", "0");
    let mut process = ServerProcess::spawn(&cmd, &t.marker, "server-pdf");
    let mut port = String::new();
    let waited = process.wait_for(NODE_LIMIT, |line| {
        let Some(rest) =
            line.strip_prefix("loopback-only: listening on 127.0.0.1:")
        else {
            return false;
        };
        port = rest.trim().to_string();
        true
    });
    assert!(waited.is_ok(), "{waited:?}: {}", process.stderr());
    let url = format!("http://127.0.0.1:{port}/mcp");
    config(&t, "pdf", json!({"url": url, "protocol": "auto"}));
    let limit = NODE_LIMIT;
    // Its 400 to the 2026-07-28 probe means: the handshake era.
    let out = run(&t, "pdf", &["-v", "list", "pdf"], 0, limit);
    assert_contains(&out.stdout, "(protocol 2025-11-25)");
    assert_contains(&out.stderr, "server/discover refused: HTTP 400");
    let args =
        ["call", "pdf", "list_pdfs", "--approve", "mcp__pdf__list_pdfs"];
    let out = run(&t, "pdf", &args, 0, limit);
    assert_contains(&out.stdout, "hello.pdf");
    // Chosen modern, the same 400 names the request and what works.
    let args = ["--protocol", "modern", "list", "pdf"];
    let out = run(&t, "pdf", &args, 4, limit);
    assert_contains(&out.stderr, "server/discover: HTTP 400");
    assert_contains(&out.stderr, "Unsupported protocol version");
    assert_contains(&out.stderr, "try --protocol auto");
    process.stop("the pdf server over HTTP");
}

#[test]
fn interop_eslint_names_the_errors_of_a_file() {
    let test = "interop_eslint";
    let Some(server) = node_server(test, ESLINT_MCP) else { return };
    let t = Turn::take("interop", test);
    t.dir.write(
        "eslint.config.mjs",
        "export default [{ files: [\"**/*.js\"], rules: \
         { \"no-unused-vars\": \"error\", \"no-undef\": \"error\" } }];\n",
    );
    let file = t.dir.write("bad.js", "const unused = 1;\nmissing();\n");
    config(
        &t,
        "eslint",
        json!({"command": "node", "args": [server.to_str().unwrap(), t.marker]}),
    );
    let limit = NODE_LIMIT;
    let out = run(&t, "eslint", &["list", "eslint"], 0, limit);
    assert_contains(&out.stdout, "mcp__eslint__lint-files  execute");
    let out = run(&t, "eslint", &["list", "eslint", "lint-files"], 0, limit);
    assert_contains(&out.stdout, "  filePaths: string[]  (required)\n");
    assert_contains(&out.stdout, "--approve mcp__eslint__lint-files\n");
    let arg = format!("filePaths=[{}]", json!(file.to_str().unwrap()));
    let args = [
        "call",
        "eslint",
        "lint-files",
        &arg,
        "--approve",
        "mcp__eslint__lint-files",
    ];
    let out = run(&t, "eslint", &args, 0, limit);
    assert_contains(&out.stdout, "\"ruleId\":\"no-unused-vars\"");
    assert_contains(
        &out.stdout,
        "'unused' is assigned a value but never used.",
    );
    assert_contains(&out.stdout, "\"ruleId\":\"no-undef\"");
    assert_contains(&out.stdout, "'missing' is not defined.");
    assert_no_leftovers(&t.marker, "the eslint calls", test);
}

// ---- the README's quick start ---------------------------------------------

/// The marker before each fenced block of the quick start that the test
/// runs: `<!-- quick-start: .mcp.json -->` before the configuration (written
/// to that file), `<!-- quick-start: run -->` before commands (run in
/// order, in one shell, each checked).
const MARK: &str = "<!-- quick-start: ";

/// The marked blocks of `readme`, in order: (what, the block's lines,
/// unindented).
fn quick_start_blocks(readme: &str) -> Vec<(String, String)> {
    let mut blocks = vec![];
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.trim().strip_prefix(MARK) else { continue };
        let what = rest.trim_end_matches("-->").trim().to_string();
        let fence = lines.next().unwrap_or_default();
        let indent = fence.len() - fence.trim_start().len();
        assert!(
            fence.trim_start().starts_with("```"),
            "README.md: a fence must follow {line:?}, not {fence:?}"
        );
        let mut body = String::new();
        for l in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            body.push_str(l.get(indent..).unwrap_or(l.trim_start()));
            body.push('\n');
        }
        blocks.push((what, body));
    }
    blocks
}

/// The package spec (`NAME@VERSION`) after `-y` in the quick start's
/// `npx` entry.
fn npx_package(config: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(config)
        .unwrap_or_else(|e| panic!("README.md quick start .mcp.json: {e}"));
    let args = v["mcpServers"]["files"]["args"].as_array().cloned();
    let args = args.unwrap_or_default();
    let spec =
        args.iter().filter_map(|a| a.as_str()).find(|a| a.contains('@'));
    spec.unwrap_or_else(|| panic!("no npx package in {config}")).to_string()
}

/// README's quick start, verbatim: its marked blocks run in one shell in
/// a fresh directory, in a pipe and then with stdout on a terminal, with
/// `npx` offline from `.interop/npx-cache`; every command exits 0 and
/// shows what a newcomer should see.
#[test]
fn interop_readme_quick_start() {
    let test = "interop_readme_quick_start";
    let Some(stamp) = installed_at(test, ".interop/npx-cache/.stamp") else {
        return;
    };
    let readme =
        std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let blocks = quick_start_blocks(&readme);
    let config = blocks.iter().find(|(w, _)| w == ".mcp.json");
    let config = &config.expect("README.md: no quick-start .mcp.json block").1;
    let commands: Vec<&str> = blocks
        .iter()
        .filter(|(w, _)| w == "run")
        .flat_map(|(_, b)| b.lines())
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    assert!(commands.len() >= 5, "README.md: too few quick-start commands");
    let package = npx_package(config);
    let cached = std::fs::read_to_string(&stamp).unwrap_or_default();
    assert_eq!(
        cached.trim(),
        package,
        "the README's quick start names {package}, .interop/npx-cache holds \
         {cached:?}: update QUICK_START_PACKAGE in scripts/interop-setup.sh \
         and run it"
    );
    let t = Turn::take("interop", test);
    t.dir.write(".mcp.json", config);
    // The newcomer's npm: the cache filled by interop-setup.sh, offline
    // (npx finds the package there, or fails at once naming it).
    let cache = repo_root().join(".interop/npx-cache");
    t.dir.write(
        ".home/.npmrc",
        format!(
            "cache={}\noffline=true\nupdate-notifier=false\n",
            cache.display()
        ),
    );
    // One shell runs the commands in order (the quick start's `export`s
    // carry over); a line before and after each says which and how it
    // ended.
    let mut script = String::new();
    for (i, c) in commands.iter().enumerate() {
        script.push_str(&format!(
            "echo '@@ start {i}'\n{c}\necho \"@@ end {i} $?\"\n"
        ));
    }
    let path = std::env::join_paths(
        std::iter::once(bin().parent().unwrap().to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let mut cmd = t.dir.program("bash");
    cmd.args(["-c", &script]).env("PATH", path).timeout(NODE_LIMIT * 4);
    // In a pipe, then with stdout on a terminal (what a newcomer types).
    for on_tty in [false, true] {
        let _ = std::fs::remove_file(t.dir.path("notes.txt"));
        let out = if on_tty { cmd.run_on_tty() } else { cmd.run() };
        let report = || {
            format!(
                "on a terminal: {on_tty}\n{}\n{}",
                cmd.report(&out),
                script
            )
        };
        assert_eq!(out.code, Some(0), "{}", report());
        let stdout = &out.stdout;
        for (i, c) in commands.iter().enumerate() {
            let end = format!("@@ end {i} ");
            let code = stdout
                .lines()
                .find_map(|l| l.strip_prefix(&end))
                .unwrap_or_else(|| panic!("{c}: never ended\n{}", report()));
            assert_eq!(
                code,
                "0",
                "quick start: `{c}` exited {code}\n{}",
                report()
            );
        }
        // What each step shows: the checked config, the tools, one tool whole,
        // the file read, the file written (approved by name), the listing.
        let part = |i: usize| -> &str {
            let start = stdout.find(&format!("@@ start {i}\n")).unwrap();
            let end = stdout.find(&format!("@@ end {i} ")).unwrap();
            &stdout[start..end]
        };
        let nth = |word: &str| {
            commands.iter().position(|c| c.contains(word)).unwrap_or_else(
                || panic!("README.md quick start: no command with {word:?}"),
            )
        };
        assert_contains(part(nth("check-config")), "valid");
        let listing = commands
            .iter()
            .position(|c| c.trim() == "rivumi-mcp list")
            .expect("README.md quick start: no bare `rivumi-mcp list`");
        assert_contains(part(listing), "mcp__files__read_text_file");
        let one = part(nth("list files read_text_file"));
        assert_contains(one, "  path: string  (required)\n");
        assert_contains(one, "example:\n");
        assert_contains(part(nth("read_text_file path=")), "\"mcpServers\"");
        let notes = std::fs::read_to_string(t.dir.path("notes.txt"));
        assert_eq!(notes.ok().as_deref(), Some("hello"), "{}", report());
        assert_contains(part(nth("list_directory")), "[FILE] notes.txt");
    }
    assert_no_process_in(t.dir.root(), "the quick start");
}

/// No process is left whose working directory is `dir` (the quick start's
/// servers carry no marker; they run in the project directory).
#[track_caller]
fn assert_no_process_in(dir: &Path, after: &str) {
    let find = || -> Vec<String> {
        let Ok(entries) = std::fs::read_dir("/proc") else { return vec![] };
        entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
            .filter(|e| {
                std::fs::read_link(e.path().join("cwd"))
                    .is_ok_and(|c| c == dir)
            })
            .map(|e| {
                let cmd = std::fs::read(e.path().join("cmdline"))
                    .unwrap_or_default();
                let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                format!("{}: {cmd}", e.file_name().to_string_lossy())
            })
            .collect()
    };
    let start = std::time::Instant::now();
    let mut left = find();
    while !left.is_empty() && start.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(20));
        left = find();
    }
    assert!(
        left.is_empty(),
        "processes left after {after}:\n{}",
        left.join("\n")
    );
}
