//! rivumi-mcp-proto: the Model Context Protocol without I/O.
//!
//! The protocol core of [rivumi-mcp](https://github.com/OWNER/rivumi-mcp),
//! usable by any Rust program that wants MCP without an async runtime:
//! values in, values out.
//!
//! - [`mcp`]: protocol revisions and the operator's choice of era, method
//!   names (the only place that spells them), JSON-RPC envelopes, what a
//!   message from a server is ([`mcp::classify`]), the 2026-07-28 `_meta`,
//!   results and HTTP header rules ([`mcp::headers`]).
//! - [`jsonpos`]: strict JSON (and JSONC) with line/column positions and
//!   duplicate keys reported, for configuration files.
//! - [`sse`]: a Server-Sent Events parser over any [`std::io::Read`].
//! - [`streamable`]: the Streamable HTTP session rules as a state
//!   machine (session id, starting over after a 404, the standalone
//!   stream, resuming with `Last-Event-ID`, the era's headers, what an
//!   answer means); the caller does the HTTP.
//! - [`urlcheck`]: the URL rules (https, or http to loopback only).
//! - [`vars`]: `${VAR}` and `${VAR:-default}` expansion against a lookup
//!   the caller provides.
//! - [`www_auth`]: `WWW-Authenticate` challenges.
//! - [`callargs`]: `key=value` arguments typed by a JSON Schema.
//! - [`elicit`]: the form an elicitation's `requestedSchema` describes.
//! - [`term`]: making server text safe to print on a terminal.
//! - [`suggest`]: "did you mean" suggestions.
//!
//! Out of scope, by design: sockets, processes, threads, clocks, files,
//! the environment and the terminal. A caller moves bytes and reads the
//! environment; this crate decides what they mean. It has no `unsafe`
//! code and depends only on `serde_json` and `base64`.

pub mod callargs;
pub mod elicit;
pub mod jsonpos;
pub mod mcp;
pub mod sse;
pub mod streamable;
pub mod suggest;
pub mod term;
pub mod urlcheck;
pub mod vars;
pub mod www_auth;
