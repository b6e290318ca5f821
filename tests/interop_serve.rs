//! `serve` with real hosts and real upstreams: the Python SDK client, the
//! TypeScript SDK v2 client, the Inspector CLI and mcporter drive it over
//! stdio and over `--listen` (both eras where the host speaks both), and
//! server-everything, the Python SDK server and the TypeScript SDK v2
//! server sit behind it. The hosts are installed by
//! scripts/interop-setup.sh into .interop/clients-node (and .interop/venv).

use serde_json::{Value, json};

use crate::serve::{Listening, asking, demo};
use crate::util::interop::{
    Installed, Ts2, Ts2Era, Turn, installed, node_and,
};
use crate::util::{
    ALLOWLIST, Dir, bin, fixture_server, repo_root, write_mcp_json,
};

const CLIENTS: &str = ".interop/clients-node/node_modules";
const TS2_CLIENT: &str = "fixtures/interop/serve_ts2_client.mjs";
const PY_CLIENT: &str = "fixtures/interop/serve_py_client.py";

/// The hosts, or `None` when they are not installed (see `node_and`).
fn hosts(test: &str) -> Option<Installed> {
    let root = repo_root();
    let files = [
        root.join(CLIENTS).join("@modelcontextprotocol/client/package.json"),
        root.join(CLIENTS)
            .join("@modelcontextprotocol/inspector/package.json"),
        root.join(CLIENTS).join("mcporter/package.json"),
    ];
    node_and(test, &files)?;
    installed(test, &[TS2_CLIENT, PY_CLIENT])
}

/// `rivumi-mcp serve -c DIR/.mcp.json` as argv, for a host to start.
fn serve_argv(dir: &Dir) -> Vec<String> {
    vec![
        bin().display().to_string(),
        "serve".into(),
        "-c".into(),
        dir.path(".mcp.json").display().to_string(),
    ]
}

/// Checks what a client script printed: both calls' texts, the approval
/// forms, the read.
fn check_client(out: &str, what: &str, protocol: &str) {
    let line =
        out.lines().last().unwrap_or_else(|| panic!("{what}: no output"));
    let v: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("{what}: {e}: {out}"));
    if !protocol.is_empty() {
        assert_eq!(v["protocol"], protocol, "{what}: {v}");
    }
    assert!(
        v["tools"].as_array().unwrap().iter().any(|t| t == "demo__delete_all"),
        "{what}"
    );
    assert_eq!(v["echo"][1], false, "{what}: {v}");
    assert_eq!(v["approved"], json!(["deleted", false]), "{what}: {v}");
    assert_eq!(v["declined"][1], true, "{what}: {v}");
    assert!(
        v["declined"][0]
            .as_str()
            .unwrap()
            .contains("not approved by the host"),
        "{what}"
    );
    assert_eq!(v["read"], "hello", "{what}: {v}");
    let forms = v["forms"].as_array().unwrap();
    assert_eq!(forms.len(), 2, "{what}: {v}");
    assert!(
        forms[0].as_str().unwrap().contains("tool: demo__delete_all"),
        "{what}"
    );
}

/// Runs a client script (`program` `script` MODE stdio|http ...) against
/// serve in `dir`, over stdio and over a listening serve, in each mode.
fn drive(
    _t: &Turn,
    dir: &Dir,
    program: &str,
    script: &str,
    modes: &[(&str, &str)],
) {
    let l = Listening::start(dir, "demo", &[], &[]);
    let url = format!("http://{}/mcp", l.addr);
    for (mode, protocol) in modes {
        let mut stdio =
            vec![script.to_string(), mode.to_string(), "stdio".into()];
        stdio.extend(serve_argv(dir));
        let mut http =
            vec![script.to_string(), mode.to_string(), "http".into()];
        http.extend([url.clone(), l.token.clone()]);
        for args in [stdio, http] {
            let mut cmd = dir.program(program);
            cmd.args(&args)
                .env(ALLOWLIST, "demo")
                .env("TOOL", "demo__delete_all")
                .env("URI", "fixture://docs/readme");
            let out = cmd.timeout(std::time::Duration::from_secs(90)).run();
            let what = format!("{program} {mode} {}", args[2]);
            assert_eq!(out.code, Some(0), "{what}: {}", out.all());
            check_client(&out.stdout, &what, protocol);
        }
    }
}

#[test]
fn interop_serve_python_sdk_client_in_both_eras_over_stdio_and_http() {
    let Some(s) = hosts("interop_serve_py") else { return };
    let t = Turn::take("interop_serve", "interop_serve_py");
    let dir = demo("interop_serve_py_dir", &[]);
    let script = repo_root().join(PY_CLIENT).display().to_string();
    drive(
        &t,
        &dir,
        s.python.to_str().unwrap(),
        &script,
        &[
            ("legacy", "2025-11-25"),
            ("2026-07-28", "2026-07-28"),
            ("auto", "2026-07-28"),
        ],
    );
}

#[test]
fn interop_serve_typescript_sdk_v2_client_in_both_eras_over_stdio_and_http() {
    let Some(s) = hosts("interop_serve_ts2") else { return };
    let t = Turn::take("interop_serve", "interop_serve_ts2");
    let dir = demo("interop_serve_ts2_dir", &[]);
    let script = repo_root().join(TS2_CLIENT).display().to_string();
    drive(
        &t,
        &dir,
        s.node.to_str().unwrap(),
        &script,
        &[("legacy", ""), ("2026-07-28", ""), ("auto", "")],
    );
}

#[test]
fn interop_serve_inspector_cli_and_mcporter_over_stdio_and_http() {
    let Some(s) = hosts("interop_serve_cli") else { return };
    let _turn = Turn::take("interop_serve", "interop_serve_cli");
    let dir = demo("interop_serve_cli_dir", &[]);
    let l = Listening::start(&dir, "demo", &[], &[]);
    let url = format!("http://{}/mcp", l.addr);
    let clients = repo_root().join(CLIENTS);
    let inspector = clients.join(
        "@modelcontextprotocol/inspector/clients/launcher/build/index.js",
    );
    let node = s.node.to_str().unwrap();
    // The Inspector CLI: over stdio in both eras, then over HTTP.
    for era in ["legacy", "modern"] {
        let mut cmd = dir.program(node);
        cmd.arg(&inspector)
            .args(["--cli", "--protocol-era", era, "--method", "tools/call"])
            .args([
                "--tool-name",
                "demo__echo",
                "--tool-arg",
                "text=inspector",
            ])
            .args(["-e", "RIVUMI_MCP_ALLOWLIST=demo"])
            .args(serve_argv(&dir));
        let out = cmd.timeout(std::time::Duration::from_secs(90)).run();
        assert_eq!(out.code, Some(0), "inspector {era}: {}", out.all());
        let v: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(v["content"][0]["text"], "inspector", "{era}: {v}");
        let modern =
            v["_meta"]["io.modelcontextprotocol/serverInfo"].is_object();
        assert_eq!(modern, era == "modern", "{era}: {v}");
        // No elicitation declared: an execute tool is refused as a result.
        let mut cmd = dir.program(node);
        cmd.arg(&inspector)
            .args(["--cli", "--protocol-era", era, "--method", "tools/call"])
            .args([
                "--tool-name",
                "demo__delete_all",
                "-e",
                "RIVUMI_MCP_ALLOWLIST=demo",
            ])
            .args(serve_argv(&dir));
        let out = cmd.timeout(std::time::Duration::from_secs(90)).run();
        assert!(
            out.stdout.contains("\"isError\": true"),
            "{era}: {}",
            out.all()
        );
        assert!(
            out.stdout.contains("--approve mcp__demo__delete_all"),
            "{era}"
        );
    }
    let mut cmd = dir.program(node);
    cmd.arg(&inspector)
        .args(["--cli", url.as_str(), "--transport", "http"])
        .args(["--header", &format!("Authorization: Bearer {}", l.token)])
        .args([
            "--method",
            "resources/read",
            "--uri",
            "fixture://docs/readme",
        ]);
    let out = cmd.timeout(std::time::Duration::from_secs(90)).run();
    assert_eq!(out.code, Some(0), "inspector http: {}", out.all());
    assert!(out.stdout.contains("\"text\": \"hello\""), "{}", out.stdout);
    // mcporter, from its own config: stdio and HTTP.
    let config = dir.write(
        "mcporter.json",
        json!({"mcpServers": {
            "gw": {"command": "env", "args": [
                "RIVUMI_MCP_ALLOWLIST=demo", bin(), "serve", "-c", dir.path(".mcp.json")]},
            "gwhttp": {"baseUrl": url, "headers": {"Authorization": format!("Bearer {}", l.token)}},
        }})
        .to_string(),
    );
    let mcporter = clients.join("mcporter/dist/cli.js");
    for (server, text) in [("gw", "mcporter"), ("gwhttp", "mcporter-http")] {
        let mut cmd = dir.program(node);
        cmd.arg(&mcporter)
            .args(["--config", config.to_str().unwrap(), "call"])
            .arg(format!("{server}.demo__echo"))
            .arg(format!("text={text}"));
        let out = cmd.timeout(std::time::Duration::from_secs(90)).run();
        assert_eq!(out.code, Some(0), "mcporter {server}: {}", out.all());
        assert_eq!(out.stdout.trim(), text, "mcporter {server}");
    }
}

#[test]
fn interop_serve_real_upstreams_behind_serve() {
    let Some(s) = installed("interop_serve_upstreams", &[]) else { return };
    let Some(ts2) = Ts2::installed("interop_serve_upstreams") else { return };
    let t = Turn::take("interop_serve", "interop_serve_upstreams");
    let inner = Dir::new("interop_serve_upstreams_inner");
    write_mcp_json(
        &inner,
        &[
            (
                "everything",
                json!({"command": s.node, "args": [s.everything_js, "stdio"]}),
            ),
            ("py", json!({"command": s.python, "args": [s.py_server]})),
            ("ts2", ts2.stdio_entry(Ts2Era::ModernOnly, &t.marker)),
            ("fixture", fixture_server(&[])),
        ],
    );
    let mut args = vec![format!("{ALLOWLIST}=everything,py,ts2,fixture")];
    args.extend(serve_argv(&inner));
    args.push("--yes".into());
    write_mcp_json(&t.dir, &[("gw", json!({"command": "env", "args": args}))]);
    let out = t.command("gw", &["list", "gw", "--json"]).run();
    assert_eq!(out.code, Some(0), "{}", out.all());
    let listing = out.stdout;
    for name in ["everything__echo", "py__echo", "ts2__echo", "fixture__echo"]
    {
        assert!(
            listing.contains(&format!("mcp__gw__{name}")),
            "{name}: {listing}"
        );
    }
    for (tool, arg, want) in [
        ("everything__echo", "message=hi", "hi"),
        ("py__echo", "message=hi", "Echo: hi"),
        ("ts2__echo", "message=hi", "Echo: hi"),
    ] {
        let out = t.command("gw", &["call", "-y", "gw", tool, arg]).run();
        assert_eq!(out.code, Some(0), "{tool}: {}", out.all());
        assert!(out.stdout.contains(want), "{tool}: {}", out.stdout);
    }
}

#[test]
fn interop_serve_upstream_questions_reach_sdk_hosts_in_both_eras() {
    let Some(s) = hosts("interop_serve_ask") else { return };
    let _turn = Turn::take("interop_serve", "interop_serve_ask");
    let dir = Dir::new("interop_serve_ask_dir");
    let asks = json!([{"method": "elicitation/create", "params": {
        "message": "Your name?",
        "requestedSchema": {"type": "object",
            "properties": {"name": {"type": "string"}}}}}]);
    asking(&dir, &asks);
    let root = repo_root();
    let clients = [
        (s.python.clone(), root.join(PY_CLIENT)),
        (s.node.clone(), root.join(TS2_CLIENT)),
    ];
    for (program, script) in &clients {
        for mode in ["legacy", "2026-07-28"] {
            let mut cmd = dir.program(program);
            cmd.arg(script)
                .args([mode, "stdio"])
                .args(serve_argv(&dir))
                .arg("--yes")
                .env(ALLOWLIST, "demo")
                .env("ASK_TOOL", "demo__echo");
            let out = cmd.timeout(std::time::Duration::from_secs(90)).run();
            let what = format!("{} {mode}", script.display());
            assert_eq!(out.code, Some(0), "{what}: {}", out.all());
            let line = out.stdout.lines().last().unwrap_or_default();
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{what}: {e}: {}", out.all()));
            assert_eq!(
                v["forms"],
                json!(["[demo] Your name?"]),
                "{what}: {v}"
            );
            let answers: Value =
                serde_json::from_str(v["asked"].as_str().unwrap()).unwrap();
            assert_eq!(
                answers[0],
                json!({"action": "accept", "content": {"name": "Ada"}}),
                "{what}"
            );
        }
    }
}

#[test]
fn interop_serve_ts2_host_gets_progress_and_cancels_in_both_eras() {
    let Some(s) = hosts("interop_serve_ts2_progress") else { return };
    let _turn = Turn::take("interop_serve", "interop_serve_ts2_progress");
    let dir = demo("interop_serve_ts2_progress_dir", &[]);
    let l = Listening::start(&dir, "demo", &["--yes"], &[]);
    let url = format!("http://{}/mcp", l.addr);
    let script = repo_root().join(TS2_CLIENT);
    let mut runs = 0;
    for mode in ["legacy", "2026-07-28"] {
        for kind in ["stdio", "http"] {
            let mut cmd = dir.program(s.node.to_str().unwrap());
            cmd.arg(&script).args([mode, kind]);
            if kind == "stdio" {
                cmd.args(serve_argv(&dir)).arg("--yes");
            } else {
                cmd.args([url.as_str(), l.token.as_str()]);
            }
            cmd.env(ALLOWLIST, "demo").env("PROGRESS_TOOL", "demo__slow");
            let out = cmd.timeout(std::time::Duration::from_secs(90)).run();
            let what = format!("{mode} over {kind}");
            assert_eq!(out.code, Some(0), "{what}: {}", out.all());
            let line = out.stdout.lines().last().unwrap_or_default();
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{what}: {e}: {}", out.all()));
            assert_eq!(v["progress"], json!([1, 2, 3]), "{what}: {v}");
            assert_eq!(v["done"], "done", "{what}: {v}");
            assert_eq!(v["aborted"], true, "{what}: {v}");
            assert_eq!(v["after"], "after", "{what}: {v}");
            runs += 1;
            // Each abort reached the upstream as a cancellation.
            let cancels = crate::util::received(
                &dir.path("rec"),
                "notifications/cancelled",
            );
            assert_eq!(cancels.len(), runs, "{what}: {cancels:?}");
        }
    }
}

#[test]
fn interop_serve_ts2_host_hears_of_updates_in_both_eras() {
    let Some(s) = hosts("interop_serve_ts2_listen") else { return };
    let _turn = Turn::take("interop_serve", "interop_serve_ts2_listen");
    let dir = demo("interop_serve_ts2_listen_dir", &["--subscribe"]);
    let l = Listening::start(&dir, "demo", &[], &[]);
    let url = format!("http://{}/mcp", l.addr);
    let script = repo_root().join(TS2_CLIENT);
    let uri = "fixture://docs/readme";
    for mode in ["legacy", "2026-07-28"] {
        for kind in ["stdio", "http"] {
            let mut cmd = dir.program(s.node.to_str().unwrap());
            cmd.arg(&script).args([mode, kind]);
            if kind == "stdio" {
                cmd.args(serve_argv(&dir));
            } else {
                cmd.args([url.as_str(), l.token.as_str()]);
            }
            cmd.env(ALLOWLIST, "demo").env("LISTEN_URI", uri);
            let out = cmd.timeout(std::time::Duration::from_secs(90)).run();
            let what = format!("{mode} over {kind}");
            assert_eq!(out.code, Some(0), "{what}: {}", out.all());
            let line = out.stdout.lines().last().unwrap_or_default();
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{what}: {e}: {}", out.all()));
            assert_eq!(v["updated"], uri, "{what}: {v}");
            if mode != "legacy" {
                assert_eq!(
                    v["honored"]["resourceSubscriptions"],
                    json!([uri]),
                    "{what}: {v}"
                );
            }
        }
    }
}
