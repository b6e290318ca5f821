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
// The same real servers over Streamable HTTP, started on 127.0.0.1.
mod interop_http;
// OAuth login against the TypeScript SDK's OAuth demo, on 127.0.0.1.
mod interop_oauth;
// A 2026-07-28 server (TypeScript SDK v2), dual-era and modern-only.
mod interop_modern;
// Tasks (call --task, --detach, task ...) with server-everything.
mod interop_tasks;
// The stdio transport: deadlines, dying servers, caps, signals, leftovers.
mod stdio;
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
// The executor: hooks, approval, bounded output, sanitising, the journal.
mod executor;
// `batch`: JSON Lines requests over reused sessions.
mod batch;
// What a server may ask: forms, URL consent, sampling, roots, log levels.
mod ask;
// OAuth: login, logout, status, discover and the credential file.
mod login;
// Opt-in OAuth paths: discovery, scopes, step-up, registration, refresh.
mod auth_paths;
// The machine grants: private_key_jwt, workload identity, enterprise-managed
// authorization, DPoP.
mod machine_auth;
// Hostile callback clients, registrations bound to their server,
// credential files of unknown shapes, already-expired tokens.
mod hostile_auth;
// `lock` and `lock --check`, and the lock file enforced at call time.
mod lock;
// Skills (SEP-2640): list, get verified, refusals (exit 9), lock pins.
mod skills;
