//! The Model Context Protocol itself, without I/O: revisions, method
//! names, envelopes, and what an incoming message is.
//!
//! Two eras share it: the handshake era (2024-11-05 … 2025-11-25:
//! `initialize`, sessions, server requests) and 2026-07-28 (no handshake,
//! `_meta` on every request, `resultType` and `input_required` retries,
//! HTTP headers in [`headers`]). [`Choice`] is what the operator asked
//! for; [`Version`] what was spoken.
//!
//! This is the one module that spells an MCP method name. The session,
//! both transports, the login probe and every command build their
//! messages here and ask [`classify`] what a message from a server is, so
//! that a new protocol revision, method or kind of server request is one
//! change in one file. Nothing here reads or writes anything; everything
//! is unit-tested on values.

pub mod headers;
pub mod host;
pub mod size;
pub mod skills;
pub mod tasks;

use std::fmt;

use serde_json::{Map, Value, json};

use crate::{jsonpos, term};
use headers::ParamHeader;

/// A protocol revision, oldest first (so `<` means older).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// 2024-11-05, the first revision (handshake era).
    V2024_11_05,
    /// 2025-03-26 (handshake era; Streamable HTTP).
    V2025_03_26,
    /// 2025-06-18 (handshake era; elicitation).
    V2025_06_18,
    /// 2025-11-25 (the last handshake-era revision).
    V2025_11_25,
    /// 2026-07-28 (no handshake; `_meta` envelope).
    V2026_07_28,
}

impl Version {
    /// Every revision this module knows, newest first.
    pub const ALL: [Version; 5] = [
        Version::V2026_07_28,
        Version::V2025_11_25,
        Version::V2025_06_18,
        Version::V2025_03_26,
        Version::V2024_11_05,
    ];

    /// The revisions this client negotiates in `initialize`, newest first.
    pub const HANDSHAKE: [Version; 3] =
        [Version::V2025_11_25, Version::V2025_06_18, Version::V2025_03_26];

    /// The newest revision of the handshake era, offered in `initialize`.
    pub const LATEST_HANDSHAKE: Version = Version::V2025_11_25;

    /// The revision without a handshake that this client speaks.
    pub const MODERN: Version = Version::V2026_07_28;

    /// The revision as the wire spells it (`"2025-11-25"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V2024_11_05 => "2024-11-05",
            Version::V2025_03_26 => "2025-03-26",
            Version::V2025_06_18 => "2025-06-18",
            Version::V2025_11_25 => "2025-11-25",
            Version::V2026_07_28 => "2026-07-28",
        }
    }

    /// The revision a version string names, if this module knows it.
    pub fn parse(s: &str) -> Option<Version> {
        Version::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Whether it is the era without a handshake (2026-07-28 on).
    pub fn is_modern(self) -> bool {
        self >= Version::V2026_07_28
    }

    /// Whether this client speaks it in `initialize`.
    pub fn negotiable(self) -> bool {
        Version::HANDSHAKE.contains(&self)
    }

    /// Whether a message may be a JSON-RPC batch (an array). Only
    /// 2025-03-26 allowed them; 2025-06-18 removed them again.
    pub fn allows_batches(self) -> bool {
        self == Version::V2025_03_26
    }

    /// The versions this client negotiates, for messages: "a, b, c".
    pub fn negotiable_list() -> String {
        Version::HANDSHAKE.map(Version::as_str).join(", ")
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the operator chose for a server: the config key `protocol` or
/// `--protocol`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Choice {
    /// Find out: 2026-07-28 where the server speaks it, else the
    /// handshake era (how depends on the transport; see the session).
    #[default]
    Auto,
    /// 2026-07-28 only.
    Modern,
    /// The handshake era only.
    Legacy,
}

impl Choice {
    /// The names `--protocol` accepts, in help order.
    pub const NAMES: [&str; 3] = ["auto", "modern", "legacy"];

    /// The choice a `--protocol` name stands for, if any.
    pub fn parse(s: &str) -> Option<Choice> {
        match s {
            "auto" => Some(Choice::Auto),
            "modern" => Some(Choice::Modern),
            "legacy" => Some(Choice::Legacy),
            _ => None,
        }
    }
}

impl std::str::FromStr for Choice {
    type Err = String;

    /// One of [`Choice::NAMES`].
    fn from_str(s: &str) -> Result<Choice, String> {
        Choice::parse(s).ok_or_else(|| format!("unknown protocol '{s}'"))
    }
}

/// Method names, as the specification spells them.
pub mod method {
    /// The handshake-era `initialize` request.
    pub const INITIALIZE: &str = "initialize";
    /// The 2026-07-28 `server/discover` request.
    pub const SERVER_DISCOVER: &str = "server/discover";
    /// A server's request for user input (form or URL).
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// A server's request for an LLM completion.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// A server's request for the client's roots.
    pub const ROOTS_LIST: &str = "roots/list";
    /// Sets the server's logging level.
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// A liveness check, in either direction.
    pub const PING: &str = "ping";
    /// Lists the server's tools (paged).
    pub const TOOLS_LIST: &str = "tools/list";
    /// Calls a tool.
    pub const TOOLS_CALL: &str = "tools/call";
    /// Lists the server's resources (paged).
    pub const RESOURCES_LIST: &str = "resources/list";
    /// Lists the server's resource templates (paged).
    pub const RESOURCE_TEMPLATES_LIST: &str = "resources/templates/list";
    /// Reads a resource.
    pub const RESOURCES_READ: &str = "resources/read";
    /// Asks to be told when a resource changes (handshake era).
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// Ends a subscription.
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    /// A subscribed resource changed.
    pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
    /// 2026-07-28: a long-lived request for the notifications the client
    /// opts in to (replaces the GET stream and `resources/subscribe`).
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
    /// The first message of a `subscriptions/listen`: what is honoured.
    pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str =
        "notifications/subscriptions/acknowledged";
    /// Lists the server's prompts (paged).
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// Gets a prompt.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// Lists the skills a server offers (SEP-2640).
    pub const SKILLS_LIST: &str = "skills/list";
    /// Gets one skill (SEP-2640).
    pub const SKILLS_GET: &str = "skills/get";
    /// Polls a task (SEP-2663, 2025-11-25 experimental tasks).
    pub const TASKS_GET: &str = "tasks/get";
    /// Collects a task's result.
    pub const TASKS_RESULT: &str = "tasks/result";
    /// Cancels a task.
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// Lists a server's tasks.
    pub const TASKS_LIST: &str = "tasks/list";
    /// Answers a task's `input_required` (SEP-2663).
    pub const TASKS_UPDATE: &str = "tasks/update";

    /// Sent after a successful `initialize`.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// Cancels a request in flight.
    pub const CANCELLED: &str = "notifications/cancelled";
    /// Progress of a request that asked for it.
    pub const PROGRESS: &str = "notifications/progress";
    /// A log message from the server.
    pub const MESSAGE: &str = "notifications/message";
    /// The server's tool list changed.
    pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// A server's resource list changed.
    pub const RESOURCES_LIST_CHANGED: &str =
        "notifications/resources/list_changed";
    /// A server's prompt list changed.
    pub const PROMPTS_LIST_CHANGED: &str =
        "notifications/prompts/list_changed";
    /// Asks for completions of a prompt argument or a template variable.
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    /// A task's status changed (SEP-2663, 2025-11-25 experimental tasks).
    pub const TASKS_STATUS: &str = "notifications/tasks/status";
    /// Every `*/list_changed` notification ends so.
    pub const LIST_CHANGED_SUFFIX: &str = "/list_changed";
}

/// JSON-RPC and MCP error codes that this client produces or names.
pub mod code {
    /// JSON-RPC: the message is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// JSON-RPC: the message is not a valid request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// JSON-RPC: the method does not exist.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// JSON-RPC: invalid params (also MCP's resource not found).
    pub const INVALID_PARAMS: i64 = -32602;
    /// JSON-RPC: internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// MCP 2026-07-28: a header disagrees with the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// MCP 2026-07-28: the request needs a capability the client lacks.
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// MCP 2026-07-28: the protocol version is not supported.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

    /// The name of a code that MCP defines, for messages.
    pub fn name(code: i64) -> Option<&'static str> {
        Some(match code {
            -32700 => "ParseError",
            -32600 => "InvalidRequest",
            METHOD_NOT_FOUND => "MethodNotFound",
            INVALID_PARAMS => "InvalidParams/ResourceNotFound",
            INTERNAL_ERROR => "InternalError",
            HEADER_MISMATCH => "HeaderMismatch",
            MISSING_CLIENT_CAPABILITY => "MissingRequiredClientCapability",
            UNSUPPORTED_PROTOCOL_VERSION => "UnsupportedProtocolVersion",
            -32002 => "ResourceNotFound",
            _ => return None,
        })
    }
}

/// The `_meta` keys of the 2026-07-28 envelope.
pub mod meta {
    /// The revision a request speaks.
    pub const PROTOCOL_VERSION: &str =
        "io.modelcontextprotocol/protocolVersion";
    /// The client's capabilities, sent on every request.
    pub const CLIENT_CAPABILITIES: &str =
        "io.modelcontextprotocol/clientCapabilities";
    /// The client's name and version.
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The server's name and version, in a result's `_meta`.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The logging level the client asks for.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The `subscriptions/listen` request a notification belongs to.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
}

/// The client capabilities the operator's options declare: fixed before
/// any server starts, declared in both eras, and the only kinds of
/// server request this client answers (besides `ping`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// Elicitation, form mode (a person at a terminal or scripted answers).
    pub elicitation_form: bool,
    /// Elicitation, URL mode (2025-11-25 on).
    pub elicitation_url: bool,
    /// `sampling/createMessage`, through the operator's command.
    pub sampling: bool,
    /// `roots/list`, with the directories the operator named.
    pub roots: bool,
}

impl Capabilities {
    /// The `capabilities` object of `initialize` and of the 2026-07-28
    /// `_meta`.
    pub fn to_json(self) -> Value {
        let mut c = Map::new();
        if self.elicitation_form || self.elicitation_url {
            let mut e = Map::new();
            if self.elicitation_form {
                e.insert("form".into(), json!({}));
            }
            if self.elicitation_url {
                e.insert("url".into(), json!({}));
            }
            c.insert("elicitation".into(), Value::Object(e));
        }
        if self.sampling {
            c.insert("sampling".into(), json!({}));
        }
        if self.roots {
            c.insert("roots".into(), json!({}));
        }
        Value::Object(c)
    }
}

/// What a server asks of the client, in either era: a 2025-era request
/// on the stream or a 2026-07-28 `inputRequests` entry.
#[derive(Clone, Debug, PartialEq)]
pub enum Ask {
    /// `ping`.
    Ping,
    /// `elicitation/create` in form mode.
    Form,
    /// `elicitation/create` in URL mode.
    Url,
    /// `sampling/createMessage`.
    Sampling,
    /// `roots/list`.
    Roots,
}

impl Ask {
    /// For the journal and messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Ask::Ping => "ping",
            Ask::Form => "elicitation/form",
            Ask::Url => "elicitation/url",
            Ask::Sampling => "sampling",
            Ask::Roots => "roots",
        }
    }
}

/// What kind of request `method` with `params` is, when `caps` declares
/// it (`ping` always is); `Err` is the refusal's message. The one
/// decision of what this client answers, for both eras.
pub fn ask(
    method: &str,
    params: &Value,
    caps: Capabilities,
) -> Result<Ask, String> {
    let (ask, declared) = match method {
        method::PING => (Ask::Ping, true),
        method::ELICITATION_CREATE => {
            match params.get("mode").and_then(Value::as_str) {
                None | Some("form") => (Ask::Form, caps.elicitation_form),
                Some("url") => (Ask::Url, caps.elicitation_url),
                Some(other) => {
                    return Err(format!(
                        "elicitation mode '{}' is not supported by this \
                         client",
                        term::clip(&term::line(other), 40)
                    ));
                }
            }
        }
        method::SAMPLING_CREATE_MESSAGE => (Ask::Sampling, caps.sampling),
        method::ROOTS_LIST => (Ask::Roots, caps.roots),
        _ => {
            return Err(format!(
                "method not supported by this client: {}",
                term::clip(&term::line(method), 80)
            ));
        }
    };
    if declared {
        Ok(ask)
    } else {
        Err(format!(
            "the client did not declare the capability for {} (the \
             operator did not enable it)",
            ask.kind()
        ))
    }
}

/// A paged list and the key of its items in each page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum List {
    /// `tools/list`.
    Tools,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    ResourceTemplates,
    /// `prompts/list`.
    Prompts,
}

impl List {
    /// The method that fetches a page of this list.
    pub fn method(self) -> &'static str {
        match self {
            List::Tools => method::TOOLS_LIST,
            List::Resources => method::RESOURCES_LIST,
            List::ResourceTemplates => method::RESOURCE_TEMPLATES_LIST,
            List::Prompts => method::PROMPTS_LIST,
        }
    }

    /// The array of items in a page of this list.
    pub fn key(self) -> &'static str {
        match self {
            List::Tools => "tools",
            List::Resources => "resources",
            List::ResourceTemplates => "resourceTemplates",
            List::Prompts => "prompts",
        }
    }

    /// The params of one page: `{}` first, then `{"cursor": …}`.
    pub fn page_params(cursor: Option<&str>) -> Value {
        match cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        }
    }
}

/// What a command asks a server to do once it is running.
#[derive(Clone, Debug, PartialEq)]
pub enum Call<'a> {
    /// `headers`: the parameters the tool designated with `x-mcp-header`.
    Tool {
        /// The tool's name.
        name: &'a str,
        /// The tool's arguments.
        arguments: &'a Map<String, Value>,
        /// The tool's designated parameter headers.
        headers: &'a [ParamHeader],
    },
    /// `resources/read`.
    Read {
        /// The resource's URI.
        uri: &'a str,
    },
    /// `prompts/get`.
    Prompt {
        /// The prompt's name.
        name: &'a str,
        /// The prompt's arguments.
        arguments: &'a Map<String, Value>,
    },
}

impl Call<'_> {
    /// The method of the request.
    pub fn method(&self) -> &'static str {
        match self {
            Call::Tool { .. } => method::TOOLS_CALL,
            Call::Read { .. } => method::RESOURCES_READ,
            Call::Prompt { .. } => method::PROMPTS_GET,
        }
    }

    /// The params of the request.
    pub fn params(&self) -> Value {
        match self {
            Call::Tool { name, arguments, .. }
            | Call::Prompt { name, arguments } => {
                json!({"name": name, "arguments": arguments})
            }
            Call::Read { uri } => json!({"uri": uri}),
        }
    }

    /// The `Mcp-Param-*` headers of this call (2026-07-28 over HTTP).
    pub fn param_headers(&self) -> Vec<(String, String)> {
        match self {
            Call::Tool { arguments, headers, .. } => {
                headers::param_headers(headers, arguments)
            }
            _ => vec![],
        }
    }

    /// The deadline's name: "tool call 'add'", "resources/read 'x://y'".
    pub fn what(&self) -> String {
        match self {
            Call::Tool { name, .. } => format!("tool call '{name}'"),
            Call::Read { uri } => format!("{} '{uri}'", self.method()),
            Call::Prompt { name, .. } => format!("{} '{name}'", self.method()),
        }
    }
}

/// What this client tells a server about itself in `initialize`.
pub fn client_info() -> Value {
    json!({"name": "rivumi-mcp", "version": env!("CARGO_PKG_VERSION")})
}

/// The `initialize` params of a probe that answers nothing (the login's
/// first request): no capabilities.
pub fn initialize_params() -> Value {
    initialize_params_for(Capabilities::default())
}

/// The `initialize` params: the newest handshake version, the declared
/// capabilities, and who we are.
pub fn initialize_params_for(caps: Capabilities) -> Value {
    json!({
        "protocolVersion": Version::LATEST_HANDSHAKE.as_str(),
        "capabilities": caps.to_json(),
        "clientInfo": client_info(),
    })
}

/// MCP Apps (SEP-1865): the `ui://` resource a tool's definition names
/// as its interface (`_meta.ui.resourceUri`, or the earlier flat key
/// `_meta["ui/resourceUri"]`). A command-line client only shows it and
/// saves it on request (`read --save`); it never renders or runs it.
pub fn ui_resource(tool: &Value) -> Option<&str> {
    let meta = tool.get("_meta")?;
    meta.pointer("/ui/resourceUri")
        .or_else(|| meta.get("ui/resourceUri"))
        .and_then(Value::as_str)
        .filter(|u| u.starts_with("ui://"))
}

/// MCP Apps: a tool whose `_meta.ui.visibility` names `"app"` and not
/// `"model"` is there for the server's own interface to call (server-pdf's
/// `read_pdf_bytes`, `save_pdf`, ...), not for a model. A command-line
/// client says so and still calls it when asked.
pub fn app_only(tool: &Value) -> bool {
    tool.pointer("/_meta/ui/visibility").and_then(Value::as_array).is_some_and(
        |v| v.iter().any(|x| x == "app") && !v.iter().any(|x| x == "model"),
    )
}

/// Declares the extension `id` in a 2026-07-28 request's client
/// capabilities (`_meta`, already filled in): `extensions: {id: {}}`.
pub fn declare_extension(params: &mut Value, id: &str) {
    let caps =
        params.pointer_mut("/_meta").and_then(Value::as_object_mut).map(|m| {
            m.entry(meta::CLIENT_CAPABILITIES).or_insert_with(|| json!({}))
        });
    if let Some(Value::Object(c)) = caps {
        let ext = c.entry("extensions").or_insert_with(|| json!({}));
        if let Value::Object(e) = ext {
            e.insert(id.into(), json!({}));
        }
    }
}

/// Adds the 2026-07-28 `_meta` to request params (an object): the
/// version, the client's declared capabilities and who we are.
pub fn with_modern_meta(
    params: &mut Value,
    version: Version,
    caps: Capabilities,
) {
    if !params.is_object() {
        *params = json!({});
    }
    let Value::Object(p) = params else { return };
    let m = p.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = m {
        m.insert(meta::PROTOCOL_VERSION.into(), json!(version.as_str()));
        m.insert(meta::CLIENT_CAPABILITIES.into(), caps.to_json());
        m.insert(meta::CLIENT_INFO.into(), client_info());
    }
}

/// What a 2026-07-28 server said about itself in `server/discover`.
#[derive(Clone, Debug, PartialEq)]
pub struct Discovered {
    /// The versions the server supports, as it spells them.
    pub supported: Vec<String>,
    /// The server's capabilities (`{}` when absent).
    pub capabilities: Value,
    /// The server's instructions, if any.
    pub instructions: Option<String>,
    /// The server's `serverInfo` (`null` when absent).
    pub server_info: Value,
}

/// A `server/discover` result, if `result` is one (it lists the versions
/// the server supports).
pub fn discovered(result: &Value) -> Option<Discovered> {
    let supported = result.get("supportedVersions")?.as_array()?;
    Some(Discovered {
        supported: supported
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        capabilities: capabilities_of(result),
        instructions: instructions_of(result),
        server_info: server_info(result).unwrap_or(Value::Null),
    })
}

/// The `capabilities` object of an `initialize` or `server/discover`
/// result (`{}` when absent or not an object).
pub fn capabilities_of(result: &Value) -> Value {
    result
        .get("capabilities")
        .filter(|c| c.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}))
}

/// The `instructions` of an `initialize` or `server/discover` result.
pub fn instructions_of(result: &Value) -> Option<String> {
    result.get("instructions").and_then(Value::as_str).map(str::to_string)
}

/// The server's name and version that a 2026-07-28 result carries in its
/// `_meta`.
pub fn server_info(result: &Value) -> Option<Value> {
    result.get("_meta")?.get(meta::SERVER_INFO).cloned()
}

/// The longest `serverInfo` string member kept for the journal and the
/// screen (`name`, `version`, `title`, …), in bytes.
pub const SERVER_INFO_TEXT: usize = 200;
/// The longest other `serverInfo` member kept, as JSON text, in bytes.
const SERVER_INFO_OTHER: usize = 2000;

/// A server's `serverInfo` bounded for the journal and the screen, like
/// other server text: every string member clipped to
/// [`SERVER_INFO_TEXT`] bytes (with a marker), any other member longer
/// than 2,000 bytes of JSON left out. A value that is not an object is
/// kept only when short.
pub fn bounded_server_info(info: &Value) -> Value {
    let short = |v: &Value| v.to_string().len() <= SERVER_INFO_OTHER;
    match info {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter_map(|(k, v)| {
                    let k = term::clip(k, SERVER_INFO_TEXT).into_owned();
                    match v {
                        Value::String(s) => Some((
                            k,
                            Value::String(
                                term::clip(s, SERVER_INFO_TEXT).into_owned(),
                            ),
                        )),
                        v if short(v) => Some((k, v.clone())),
                        _ => None,
                    }
                })
                .collect(),
        ),
        Value::String(s) => {
            Value::String(term::clip(s, SERVER_INFO_TEXT).into_owned())
        }
        v if short(v) => v.clone(),
        _ => Value::Null,
    }
}

/// What kind of result a server sent (2026-07-28; older results have no
/// `resultType` and are complete).
#[derive(Clone, Debug, PartialEq)]
pub enum ResultType {
    /// The result is final.
    Complete,
    /// The server needs input before it can finish.
    InputRequired,
    /// A task to poll instead of the result ([`tasks`]).
    Task,
    /// A `resultType` this client does not know, as sent.
    Unknown(String),
}

/// The kind of a result, from its `resultType`.
pub fn result_type(result: &Value) -> ResultType {
    match result.get("resultType") {
        None => ResultType::Complete,
        Some(Value::String(s)) if s == "complete" => ResultType::Complete,
        Some(Value::String(s)) if s == "input_required" => {
            ResultType::InputRequired
        }
        Some(Value::String(s)) if s == "task" => ResultType::Task,
        Some(other) => ResultType::Unknown(match other {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        }),
    }
}

/// Whether a method may answer `input_required`.
pub fn may_require_input(method: &str) -> bool {
    matches!(
        method,
        method::TOOLS_CALL | method::PROMPTS_GET | method::RESOURCES_READ
    )
}

/// One thing an `input_required` result asks of the client.
#[derive(Clone, Debug, PartialEq)]
pub struct InputRequest {
    /// The key to answer under in `inputResponses`.
    pub key: String,
    /// The method the request stands for (`elicitation/create`, ...).
    pub method: String,
    /// Its params.
    pub params: Value,
}

/// The most input requests one `input_required` result may hold: each is
/// answered (a form asked, a command run) before the retry.
pub const MAX_INPUT_REQUESTS: usize = 32;

/// The input requests of an `input_required` result (at most
/// [`MAX_INPUT_REQUESTS`]), and the opaque
/// `requestState` to echo (absent when the server gave none).
pub fn input_requests(
    result: &Value,
) -> Result<(Vec<InputRequest>, Option<Value>), &'static str> {
    let requests = match result.get("inputRequests") {
        None | Some(Value::Null) => vec![],
        Some(Value::Object(m)) if m.len() > MAX_INPUT_REQUESTS => {
            return Err("more than 32 input requests in one round");
        }
        Some(Value::Object(m)) => {
            let mut out = vec![];
            for (key, r) in m {
                let Some(method) = r.get("method").and_then(Value::as_str)
                else {
                    return Err("an input request has no method");
                };
                out.push(InputRequest {
                    key: key.clone(),
                    method: method.to_string(),
                    params: r.get("params").cloned().unwrap_or(Value::Null),
                });
            }
            out
        }
        Some(_) => return Err("'inputRequests' is not an object"),
    };
    Ok((requests, result.get("requestState").cloned()))
}

/// The params of the retry after `input_required`: the original params
/// with the answers and, only when the server gave one, its
/// `requestState` exactly as it was sent.
pub fn retry_params(
    original: &Value,
    responses: Map<String, Value>,
    state: Option<&Value>,
) -> Value {
    let mut p = original.clone();
    if let Value::Object(m) = &mut p {
        m.remove("inputResponses");
        m.remove("requestState");
        if !responses.is_empty() {
            m.insert("inputResponses".into(), Value::Object(responses));
        }
        if let Some(s) = state {
            m.insert("requestState".into(), s.clone());
        }
    }
    p
}

/// A request envelope.
pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A notification envelope; `params` is left out when `None`.
pub fn notification(method: &str, params: Option<Value>) -> Value {
    let mut m = json!({"jsonrpc": "2.0", "method": method});
    if let Some(p) = params {
        m["params"] = p;
    }
    m
}

/// A successful response to a server's request.
pub fn response(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response to a server's request.
pub fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id,
           "error": {"code": code, "message": message}})
}

/// Asks for progress notices on `params` (an object), with `token`.
pub fn with_progress_token(params: &mut Value, token: u64) {
    if let Value::Object(p) = params {
        let meta =
            p.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = meta {
            m.insert("progressToken".into(), json!(token));
        }
    }
}

/// Whether a request asks for progress notices (tool calls do).
pub fn wants_progress(method: &str) -> bool {
    method == method::TOOLS_CALL
}

/// The `notifications/cancelled` for request `id`.
pub fn cancelled(id: u64, reason: &str) -> Value {
    notification(
        method::CANCELLED,
        Some(json!({"requestId": id, "reason": reason})),
    )
}

/// The `notifications/initialized` that ends the handshake.
pub fn initialized() -> Value {
    notification(method::INITIALIZED, None)
}

/// The method of a message, if it has one.
pub fn method_of(m: &Value) -> Option<&str> {
    m.get("method").and_then(Value::as_str)
}

/// Whether a message is the `initialize` request.
pub fn is_initialize(m: &Value) -> bool {
    method_of(m) == Some(method::INITIALIZE)
}

/// Whether a message is the `notifications/initialized` notification.
pub fn is_initialized(m: &Value) -> bool {
    method_of(m) == Some(method::INITIALIZED)
}

/// A JSON-RPC error object from a server, bounded for printing.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    /// `None` when the error object has no integer `code`.
    pub code: Option<i64>,
    /// The error's message (as sent).
    pub message: String,
    /// The error's `data`, if any.
    pub data: Option<Value>,
}

/// How much of a server's error message is shown, and of its data.
const ERROR_TEXT: usize = 500;
const ERROR_DATA: usize = 200;

impl RpcError {
    fn parse(err: &Value) -> RpcError {
        RpcError {
            code: err.get("code").and_then(Value::as_i64),
            message: err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            data: err.get("data").cloned(),
        }
    }

    /// One line for messages: code, message and data, each sanitised and
    /// bounded (a server decides how long its error is, not us).
    pub fn describe(&self) -> String {
        let mut text = match self.code {
            Some(c) => format!(
                "server error {c}{}: {}",
                code::name(c).map(|n| format!(" ({n})")).unwrap_or_default(),
                term::clip(&term::line(&self.message), ERROR_TEXT)
            ),
            None => "malformed error response (no integer 'code')".to_string(),
        };
        if let Some(data) = &self.data {
            text.push_str(&format!(
                " ({})",
                term::clip(&term::line(&data.to_string()), ERROR_DATA)
            ));
        }
        text
    }
}

impl RpcError {
    /// Whether the error is one the handshake era would have avoided: a
    /// server that cannot send its client a request in the 2026-07-28 era
    /// (the Python SDK's "no back-channel for server-initiated requests",
    /// raised when a tool asks something over a transport that has no
    /// stream for it), where the handshake era's streams carry it.
    pub fn wants_handshake_era(&self) -> bool {
        self.message
            .to_ascii_lowercase()
            .contains("no back-channel for server-initiated requests")
    }

    /// The versions a `-32022` UnsupportedProtocolVersion error says the
    /// server supports.
    pub fn supported_versions(&self) -> Option<Vec<String>> {
        if self.code != Some(code::UNSUPPORTED_PROTOCOL_VERSION) {
            return None;
        }
        let list = self.data.as_ref()?.get("supported")?.as_array()?;
        Some(
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        )
    }
}

/// The schema member where [`parse_message`] keeps the order of a form's
/// fields (serde_json keeps no key order).
pub const FIELD_ORDER: &str = "x-rivumi-field-order";

/// Messages longer than this are not read a second time for field order
/// (a form is small; a large tool result that merely quotes one is not a
/// form). The second reading's tree is bounded by it too.
const MAX_ORDERED: usize = 256 << 10;

/// Why a server's message was not parsed.
#[derive(Debug)]
pub enum Unparsed {
    /// The text is not JSON.
    Json(serde_json::Error),
    /// JSON whose tree would take more memory than allowed
    /// ([`size::parsed_size`]); nothing was built.
    TooLarge {
        /// The estimate, in bytes.
        estimate: usize,
        /// The bound, in bytes.
        budget: usize,
    },
}

impl fmt::Display for Unparsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unparsed::Json(e) => write!(f, "{e}"),
            Unparsed::TooLarge { estimate, budget } => write!(
                f,
                "a message that would take about {} MiB of memory once \
                 parsed (many small values), more than the {} MiB allowed",
                estimate.div_ceil(1 << 20),
                budget.div_ceil(1 << 20)
            ),
        }
    }
}

/// Parses one message from a server, refusing one whose tree would take
/// more than `budget` bytes ([`size::parsed_size`]) before building it.
/// A form (`elicitation/create`) is
/// asked in the order its schema lists its fields, which serde_json does
/// not keep: where the text holds a `requestedSchema`, its `properties`
/// are read again with [`jsonpos`] (which keeps order) and their names
/// are put into that schema as [`FIELD_ORDER`]. Nothing else changes.
pub fn parse_message(bytes: &[u8], budget: usize) -> Result<Value, Unparsed> {
    let estimate = size::parsed_size(bytes);
    if estimate > budget {
        return Err(Unparsed::TooLarge { estimate, budget });
    }
    let mut v: Value =
        serde_json::from_slice(bytes).map_err(Unparsed::Json)?;
    let holds_form = bytes.len() <= MAX_ORDERED
        && bytes.windows(17).any(|w| w == b"\"requestedSchema\"");
    if holds_form
        && let Ok(text) = std::str::from_utf8(bytes)
        && let Ok(doc) = jsonpos::parse(text)
    {
        keep_field_order(&doc.root, &mut v);
    }
    Ok(v)
}

fn keep_field_order(node: &jsonpos::Node, v: &mut Value) {
    use jsonpos::Kind;
    match (&node.kind, v) {
        (Kind::Object(members), Value::Object(map)) => {
            for m in members {
                let Some(child) = map.get_mut(&m.key) else { continue };
                if m.key == "requestedSchema" {
                    record_field_order(&m.value, child);
                }
                keep_field_order(&m.value, child);
            }
        }
        (Kind::Array(items), Value::Array(values)) => {
            for (n, v) in items.iter().zip(values) {
                keep_field_order(n, v);
            }
        }
        _ => {}
    }
}

fn record_field_order(schema: &jsonpos::Node, v: &mut Value) {
    let jsonpos::Kind::Object(members) = &schema.kind else { return };
    let props = members.iter().rev().find(|m| m.key == "properties");
    let Some(jsonpos::Kind::Object(props)) = props.map(|p| &p.value.kind)
    else {
        return;
    };
    let order = props.iter().map(|p| Value::String(p.key.clone())).collect();
    if let Value::Object(m) = v {
        m.insert(FIELD_ORDER.into(), Value::Array(order));
    }
}

/// What a message from a server is.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    /// A response to one of our requests.
    Response {
        /// The id of our request.
        id: Value,
        /// Its result or error.
        outcome: Outcome,
    },
    /// A request the server makes of us; it wants an answer.
    Request {
        /// The server's id, echoed in our answer.
        id: Value,
        /// The method asked for.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// A notification; it wants no answer.
    Notification {
        /// The notification's method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// Anything else, with the reason (for `-v`).
    Invalid(&'static str),
}

/// How a response ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// A result object.
    Result(Value),
    /// An error object.
    Error(RpcError),
    /// A `result` that is not an object.
    BadResult,
}

/// Classifies one message (not a batch: see [`split_batch`]).
pub fn classify(m: Value) -> Incoming {
    let Value::Object(mut obj) = m else {
        return Incoming::Invalid("a message that is not an object");
    };
    let id = obj.remove("id");
    let params = obj.remove("params").unwrap_or(Value::Null);
    let method = match obj.get("method") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Incoming::Invalid(
                "a message whose method is not a string",
            );
        }
        None => None,
    };
    match (method, id) {
        (Some(method), Some(id)) if valid_id(&id) => {
            Incoming::Request { id, method, params }
        }
        (Some(_), Some(_)) => {
            Incoming::Invalid("a request whose id is not a string or integer")
        }
        (Some(method), None) => Incoming::Notification { method, params },
        (None, Some(id)) => {
            let outcome = match (obj.remove("result"), obj.get("error")) {
                (Some(r @ Value::Object(_)), _) => Outcome::Result(r),
                (Some(_), _) => Outcome::BadResult,
                (None, Some(e)) => Outcome::Error(RpcError::parse(e)),
                (None, None) => Outcome::Error(RpcError::parse(&Value::Null)),
            };
            Incoming::Response { id, outcome }
        }
        (None, None) => Incoming::Invalid("a message without method or id"),
    }
}

/// JSON-RPC ids are strings or integers (MCP forbids null).
fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

/// The messages of one JSON-RPC value: an array is a batch, which only
/// some revisions allow (`Err` names the problem).
pub fn split_batch(
    m: Value,
    version: Option<Version>,
) -> Result<Vec<Value>, &'static str> {
    match m {
        Value::Array(items) => {
            if version.is_some_and(Version::allows_batches) {
                Ok(items)
            } else {
                Err("server sent a JSON-RPC batch, which this protocol \
                     version does not allow")
            }
        }
        m => Ok(vec![m]),
    }
}

/// Whether a notification reports a changed list.
pub fn is_list_changed(method: &str) -> bool {
    method.ends_with(method::LIST_CHANGED_SUFFIX)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_tool_for_the_app_only() {
        let v = |v: Value| json!({"_meta": {"ui": {"visibility": v}}});
        assert!(app_only(&v(json!(["app"]))));
        assert!(!app_only(&v(json!(["model", "app"]))));
        assert!(!app_only(&v(json!(["model"]))));
        assert!(!app_only(&v(json!([]))));
        assert!(!app_only(&v(json!("app"))));
        assert!(!app_only(&json!({})));
    }

    #[test]
    fn a_tool_names_its_ui_resource() {
        let t = json!({"_meta": {"ui": {"resourceUri": "ui://a/b.html"}}});
        assert_eq!(ui_resource(&t), Some("ui://a/b.html"));
        let flat = json!({"_meta": {"ui/resourceUri": "ui://x"}});
        assert_eq!(ui_resource(&flat), Some("ui://x"));
        let other = json!({"_meta": {"ui": {"resourceUri": "https://x"}}});
        assert_eq!(ui_resource(&other), None);
        assert_eq!(ui_resource(&json!({})), None);
    }

    #[test]
    fn a_task_is_its_own_result_type() {
        assert_eq!(
            result_type(&json!({"resultType": "task"})),
            ResultType::Task
        );
    }

    use super::*;

    #[test]
    fn versions_round_trip_and_order() {
        for v in Version::ALL {
            assert_eq!(Version::parse(v.as_str()), Some(v));
        }
        assert_eq!(Version::parse("2025-11-26"), None);
        assert!(Version::V2024_11_05 < Version::V2025_11_25);
        assert!(!Version::V2024_11_05.negotiable());
        assert!(Version::V2025_03_26.negotiable());
        assert_eq!(
            Version::negotiable_list(),
            "2025-11-25, 2025-06-18, 2025-03-26"
        );
        assert!(Version::V2025_03_26.allows_batches());
        assert!(!Version::V2025_06_18.allows_batches());
    }

    #[test]
    fn initialize_offers_the_newest_version_and_the_declared_capabilities() {
        let p = initialize_params();
        assert_eq!(p["protocolVersion"], "2025-11-25");
        assert_eq!(p["capabilities"], json!({}));
        let all = Capabilities {
            elicitation_form: true,
            elicitation_url: true,
            sampling: true,
            roots: true,
        };
        assert_eq!(
            initialize_params_for(all)["capabilities"],
            json!({"elicitation": {"form": {}, "url": {}}, "sampling": {},
                   "roots": {}})
        );
        let mut m = json!({});
        with_modern_meta(&mut m, Version::MODERN, all);
        assert_eq!(m["_meta"][meta::CLIENT_CAPABILITIES]["roots"], json!({}));
        assert_eq!(p["clientInfo"]["name"], "rivumi-mcp");
        let r = request(7, method::INITIALIZE, p);
        assert_eq!(r["jsonrpc"], "2.0");
        assert_eq!(r["id"], 7);
        assert!(is_initialize(&r));
        assert!(is_initialized(&initialized()));
        assert!(initialized().get("params").is_none());
    }

    #[test]
    fn progress_tokens_join_existing_meta() {
        let mut p = json!({"name": "t", "_meta": {"other": 1}});
        with_progress_token(&mut p, 5);
        assert_eq!(p["_meta"], json!({"other": 1, "progressToken": 5}));
        let mut q = json!({});
        with_progress_token(&mut q, 6);
        assert_eq!(q["_meta"]["progressToken"], 6);
        assert!(wants_progress(method::TOOLS_CALL));
        assert!(!wants_progress(method::TOOLS_LIST));
    }

    #[test]
    fn classifies_responses_by_result_and_error() {
        let ok = classify(json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
        assert_eq!(
            ok,
            Incoming::Response {
                id: json!(1),
                outcome: Outcome::Result(json!({}))
            }
        );
        let bad = classify(json!({"jsonrpc": "2.0", "id": 1, "result": 3}));
        assert!(matches!(
            bad,
            Incoming::Response { outcome: Outcome::BadResult, .. }
        ));
        let err = classify(json!({"id": "a", "error":
            {"code": -32601, "message": "nope", "data": {"x": 1}}}));
        let Incoming::Response { id, outcome: Outcome::Error(e) } = err else {
            panic!("not an error response");
        };
        assert_eq!(id, json!("a"));
        assert_eq!(e.code, Some(-32601));
        assert_eq!(
            e.describe(),
            r#"server error -32601 (MethodNotFound): nope ({"x":1})"#
        );
    }

    #[test]
    fn classifies_requests_and_notifications() {
        let r = classify(json!({"id": 9, "method": "ping"}));
        assert_eq!(
            r,
            Incoming::Request {
                id: json!(9),
                method: "ping".into(),
                params: Value::Null
            }
        );
        let n = classify(json!({"method": method::PROGRESS,
                                "params": {"progress": 1}}));
        assert_eq!(
            n,
            Incoming::Notification {
                method: method::PROGRESS.into(),
                params: json!({"progress": 1})
            }
        );
    }

    #[test]
    fn classifies_invalid_messages() {
        assert!(matches!(classify(json!([1])), Incoming::Invalid(_)));
        assert!(matches!(classify(json!("x")), Incoming::Invalid(_)));
        assert!(matches!(
            classify(json!({"jsonrpc": "2.0"})),
            Incoming::Invalid(_)
        ));
        assert!(matches!(
            classify(json!({"method": 3})),
            Incoming::Invalid(_)
        ));
        assert!(matches!(
            classify(json!({"id": null, "method": "ping"})),
            Incoming::Invalid(_)
        ));
        assert!(matches!(
            classify(json!({"id": 1.5, "method": "ping"})),
            Incoming::Invalid(_)
        ));
    }

    #[test]
    fn an_error_without_a_back_channel_wants_the_handshake_era() {
        let e = RpcError::parse(&json!({"code": -32600, "message":
            "Cannot send 'elicitation/create': this transport context has \
             no back-channel for server-initiated requests."}));
        assert!(e.wants_handshake_era());
        let e = RpcError::parse(&json!({"code": -32600, "message": "boom"}));
        assert!(!e.wants_handshake_era());
    }

    #[test]
    fn error_text_is_bounded_and_sanitised() {
        let long = "A".repeat(10_000);
        let e = RpcError {
            code: Some(-1),
            message: format!("bad\x1b[31m{long}"),
            data: Some(json!(long)),
        };
        let d = e.describe();
        assert!(d.len() < 2 * ERROR_TEXT + 100, "{} bytes", d.len());
        assert!(!d.contains('\x1b'));
        let m = RpcError::parse(&json!({"message": "x"}));
        assert_eq!(m.code, None);
        assert!(m.describe().starts_with("malformed error response"));
    }

    #[test]
    fn batches_only_where_the_version_allows() {
        let b = json!([{"id": 1, "result": {}}, {"method": "x"}]);
        assert_eq!(
            split_batch(b.clone(), Some(Version::V2025_03_26)).unwrap().len(),
            2
        );
        assert!(split_batch(b.clone(), Some(Version::V2025_11_25)).is_err());
        assert!(split_batch(b, None).is_err());
        assert_eq!(split_batch(json!({"id": 1}), None).unwrap().len(), 1);
    }

    #[test]
    fn only_declared_kinds_are_answered() {
        let none = Capabilities::default();
        let p = json!({});
        assert_eq!(ask(method::PING, &p, none), Ok(Ask::Ping));
        let e = ask(method::SAMPLING_CREATE_MESSAGE, &p, none).unwrap_err();
        assert!(e.contains("sampling"), "{e}");
        assert!(ask(method::ELICITATION_CREATE, &p, none).is_err());
        let form = Capabilities { elicitation_form: true, ..none };
        assert_eq!(ask(method::ELICITATION_CREATE, &p, form), Ok(Ask::Form));
        let url = json!({"mode": "url"});
        assert!(ask(method::ELICITATION_CREATE, &url, form).is_err());
        let both = Capabilities { elicitation_url: true, ..form };
        assert_eq!(ask(method::ELICITATION_CREATE, &url, both), Ok(Ask::Url));
        let odd = json!({"mode": "\u{1b}[2Jx"});
        let e = ask(method::ELICITATION_CREATE, &odd, both).unwrap_err();
        assert!(!e.contains('\u{1b}'), "{e}");
        let roots = Capabilities { roots: true, ..none };
        assert_eq!(ask(method::ROOTS_LIST, &p, roots), Ok(Ask::Roots));
        let e = ask("fixture/unknown", &p, both).unwrap_err();
        assert!(e.contains("fixture/unknown"));
        let r = error_response(json!(3), code::METHOD_NOT_FOUND, &e);
        assert_eq!(r["error"]["code"], -32601);
        assert_eq!(response(json!("x"), json!({}))["id"], "x");
    }

    #[test]
    fn calls_and_lists_name_their_methods() {
        let args = Map::new();
        let t = Call::Tool { name: "add", arguments: &args, headers: &[] };
        assert_eq!(t.method(), method::TOOLS_CALL);
        assert_eq!(t.params(), json!({"name": "add", "arguments": {}}));
        assert_eq!(t.what(), "tool call 'add'");
        let r = Call::Read { uri: "file:///a" };
        assert_eq!(r.params(), json!({"uri": "file:///a"}));
        assert_eq!(r.what(), "resources/read 'file:///a'");
        assert_eq!(List::ResourceTemplates.key(), "resourceTemplates");
        assert_eq!(List::Prompts.method(), "prompts/list");
        assert_eq!(List::page_params(Some("c")), json!({"cursor": "c"}));
        assert!(is_list_changed(method::TOOLS_LIST_CHANGED));
        assert!(!is_list_changed(method::PROGRESS));
        let c = cancelled(4, "timed out");
        assert_eq!(c["params"]["requestId"], 4);
    }

    #[test]
    fn server_info_is_bounded() {
        let long = "n".repeat(5 << 20);
        let info = json!({"name": long, "version": "1", "title": long,
            "icons": vec![json!({"src": "x"}); 10_000], "websiteUrl": "u"});
        let b = bounded_server_info(&info);
        assert!(b.to_string().len() < 1000, "{}", b.to_string().len());
        assert_eq!(b["version"], "1");
        assert_eq!(b["websiteUrl"], "u");
        assert!(b.get("icons").is_none());
        assert!(b["name"].as_str().unwrap().contains("more bytes"));
        let short = bounded_server_info(&json!(long));
        assert!(short.as_str().unwrap().len() < 300);
    }

    #[test]
    fn input_requests_per_round_are_bounded() {
        let round = |n: usize| {
            let m: Map<String, Value> = (0..n)
                .map(|i| (format!("k{i}"), json!({"method": "ping"})))
                .collect();
            json!({"resultType": "input_required", "inputRequests": m})
        };
        let (ok, _) = input_requests(&round(MAX_INPUT_REQUESTS)).unwrap();
        assert_eq!(ok.len(), MAX_INPUT_REQUESTS);
        let e = input_requests(&round(MAX_INPUT_REQUESTS + 1)).unwrap_err();
        assert!(e.contains(&MAX_INPUT_REQUESTS.to_string()), "{e}");
    }

    #[test]
    fn a_message_that_would_expand_past_the_budget_is_refused_unbuilt() {
        let block = r#"{"type":"text","text":""}"#;
        let text =
            format!(r#"{{"content":[{}]}}"#, vec![block; 1000].join(","));
        let need = size::parsed_size(text.as_bytes());
        assert!(parse_message(text.as_bytes(), need).is_ok());
        let e = parse_message(text.as_bytes(), need - 1).unwrap_err();
        assert!(matches!(e, Unparsed::TooLarge { .. }), "{e}");
        assert!(e.to_string().contains("MiB of memory once parsed"), "{e}");
    }

    #[test]
    fn forms_keep_the_order_of_their_fields() {
        // A 2025 request and a 2026-07-28 input request, fields out of
        // alphabetical order.
        let text = br#"{"jsonrpc":"2.0","id":1,"method":"elicitation/create",
            "params":{"message":"m","requestedSchema":{"type":"object",
            "properties":{"zeta":{"type":"string"},"alpha":{"type":"string"},
            "mid":{"type":"integer"}}}}}"#;
        let v = parse_message(text, usize::MAX).unwrap();
        let order = &v["params"]["requestedSchema"][FIELD_ORDER];
        assert_eq!(order, &json!(["zeta", "alpha", "mid"]));
        let text = br#"{"jsonrpc":"2.0","id":2,"result":{"resultType":
            "input_required","inputRequests":{"k":{"method":
            "elicitation/create","params":{"requestedSchema":{"properties":
            {"b":{"type":"string"},"a":{"type":"string"}}}}}}}}"#;
        let v = parse_message(text, usize::MAX).unwrap();
        let schema =
            &v["result"]["inputRequests"]["k"]["params"]["requestedSchema"];
        assert_eq!(schema[FIELD_ORDER], json!(["b", "a"]));
        // Other messages are what serde_json reads, nothing added.
        let plain = br#"{"jsonrpc":"2.0","id":3,"result":{"b":1,"a":2}}"#;
        assert_eq!(
            parse_message(plain, usize::MAX).unwrap(),
            serde_json::from_slice::<Value>(plain).unwrap()
        );
        assert!(parse_message(b"{nope", usize::MAX).is_err());
        // Too large to be a form: not read twice.
        let pad = "x".repeat(MAX_ORDERED);
        let big = format!(
            r#"{{"p":"{pad}","requestedSchema":{{"properties":{{"b":{{}},"a":{{}}}}}}}}"#
        );
        let v = parse_message(big.as_bytes(), usize::MAX).unwrap();
        assert!(v["requestedSchema"].get(FIELD_ORDER).is_none());
    }
}
