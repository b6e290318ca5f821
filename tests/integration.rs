//! The integration tests: one binary (`cargo test --test integration`),
//! one module per area, each driving the real `rivumi-mcp` executable.

// Shared helpers: temporary directories and commands with a pinned
// environment and a deadline.
mod util;

// The command line: help, version, usage errors, option placement, pipes.
mod cli;
// Completions in real shells, the man page, `make install`.
mod completions;
// `check-config`: the fixtures/config/ cases and output formats.
mod check_config;
// Claude Code's rules and other editors' files: ${VAR} everywhere, the
// directory servers run in, disabled servers, VS Code and Cursor files.
mod editors;
// Servers typed on the command line: --stdio, --http, --name.
mod adhoc;
// Real MCP servers (.interop/, scripts/interop-setup.sh) over stdio.
mod interop;
// Servers of the second trial over stdio: the reference mcp-server-sqlite
// (no resources/templates/list), git-mcp-server (text with nulls),
// mcp-server-fetch (the one-tool view, a call to a loopback page).
mod interop_trial;
// The second trial's other servers (mcp-shell-server, desktop-commander,
// server-pdf, @eslint/mcp) used as a newcomer would, and the README's quick
// start run verbatim in a pipe.
mod interop_real2;
// The same real servers over Streamable HTTP, started on 127.0.0.1.
mod interop_http;
// OAuth login against the TypeScript SDK's OAuth demo, on 127.0.0.1.
mod interop_oauth;
// The device grant against a real authorization server (node-oidc-provider).
mod interop_device;
// A 2026-07-28 server (TypeScript SDK v2), dual-era and modern-only.
mod interop_modern;
// Real servers that answer oddly over HTTP: git-mcp-server's 500 to the
// 2026-07-28 probe, the SDK's example of the deprecated HTTP+SSE transport.
mod interop_wild;
// Tasks (call --task, --detach, task ...) with server-everything.
mod interop_tasks;
// The stdio transport: deadlines, dying servers, caps, signals, leftovers.
mod stdio;
// MCP 2026-07-28 over stdio against the fixture's `--era modern|dual`.
mod stdio_modern;
// Hostile stdio servers: floods against the memory ceiling, exits with a
// leftover holding stdout, signals at random early moments.
mod hostile_stdio;
// `list`: tables, paging, JSON, several servers, the allowlist.
mod list;
// `call` and the resources/read/prompts/prompt bridges.
mod call;
// Arguments typed by the schema as servers write it: unions, $ref, enums,
// files, unknown names, prompt arguments.
mod args;
// The Streamable HTTP transport against an in-process scripted server.
mod http;
// Answers from the wild over HTTP: odd probe answers under auto, the old
// HTTP+SSE transport, a log line just before the result.
mod http_answers;
// The executor: hooks, approval, bounded output, sanitising, the journal.
mod executor;
// `batch`: JSON Lines requests over reused sessions.
mod batch;
// What a server may ask: forms, URL consent, sampling, roots, log levels.
mod ask;
// Hostile server requests: input rounds, sampling approval, URL fragments,
// --answer files, serverInfo.
mod hostile_asks;
// OAuth: login, logout, status, discover and the credential file.
mod login;
// Opt-in OAuth paths: discovery, scopes, step-up, registration, refresh.
mod auth_paths;
// The machine grants: private_key_jwt, workload identity, enterprise-managed
// authorization, DPoP.
mod machine_auth;
// Logging in without a browser here (device grant, paste-back), refresh
// the operator opted in to, credentials from a command.
mod headless_auth;
// Hostile callback clients, registrations bound to their server,
// credential files of unknown shapes, already-expired tokens.
mod hostile_auth;
// The daemon: warm servers, the peer check, status, stop, cancellation.
mod daemon;
// `lock` and `lock --check`, and the lock file enforced at call time.
mod lock;
// The opt-in kernel sandbox of stdio servers (Linux): a hostile server
// denied inside, the same unconfined; refusals, fingerprint, --no-sandbox.
mod sandbox;
// What the second trial against real servers found (issue 21), on the
// fixture: missing optional lists, repeated output, interrupted calls,
// script habits.
mod trial;
// `serve`: the gateway driven by a scripted host and by rivumi-mcp itself.
mod serve;
// `serve` with real hosts (SDK clients, Inspector, mcporter) and real upstreams.
mod interop_serve;
// Skills (SEP-2640): list, get verified, refusals (exit 9), lock pins.
mod skills;
// Skills against the TypeScript SDK v2's skills extension: list, get, --save, tampering refused, stale entry refreshed.
mod interop_skills;
