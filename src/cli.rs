//! The command line: one lexopt loop, one USAGE text per command.
//!
//! Parsing only validates what was typed; it reads no file, starts nothing
//! and looks at no environment variable (ripgrep's "low args" rule). Any
//! option may stand before or after the command, as people type them
//! (`rivumi-mcp --json list` = `rivumi-mcp list --json`); an option that
//! does not apply to the command is an error, never silently ignored.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::deadline;
use crate::error::{Error, Result};
use crate::suggest::suggest;

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Parsed {
    Help(String),
    Version,
    Run(Box<Args>),
}

/// Options every command understands.
#[derive(Debug, Default)]
pub(crate) struct Global {
    pub(crate) config: Option<PathBuf>,
    pub(crate) json: bool,
    pub(crate) verbose: u8,
    pub(crate) quiet: bool,
    pub(crate) strict: bool,
    pub(crate) timeout: Option<Duration>,
    pub(crate) startup_timeout: Option<Duration>,
    pub(crate) max_message: Option<usize>,
    /// Approve calls classified execute (`--yes`, `--approve execute`).
    pub(crate) yes: bool,
    pub(crate) read_only: bool,
    /// `--pre-tool-hook` command lines, in order.
    pub(crate) hooks: Vec<String>,
    pub(crate) hook_timeout: Option<Duration>,
    pub(crate) max_output: Option<usize>,
    pub(crate) journal: Option<PathBuf>,
    /// Print what servers sent as is, even on a terminal.
    pub(crate) raw: bool,
    /// Log in inline when a server asks for (more) authorization.
    pub(crate) step_up: bool,
    /// `--protocol`: overrides every server's `protocol` key.
    pub(crate) protocol: Option<crate::mcp::Choice>,
    /// `--lock PATH`: the lock file (default: beside the config file).
    pub(crate) lock: Option<PathBuf>,
    /// `--unlocked`: do not enforce the lock file for this command.
    pub(crate) unlocked: bool,
    /// `--stdio` / `--http` (with `--name`): one server typed on the
    /// command line instead of a config file.
    pub(crate) adhoc: Option<Adhoc>,
    /// `--elicit`, `--answer`, `--root`, `--sampling-command`,
    /// `--log-level`: what servers may ask of this client.
    pub(crate) client: Options,
}

/// A server the operator typed on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Adhoc {
    /// `--name`, default [`ADHOC_NAME`].
    pub(crate) name: String,
    pub(crate) target: AdhocTarget,
}

/// What an ad-hoc server runs or reaches, as typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AdhocTarget {
    /// `--stdio 'CMD ARG…'`, split into words without a shell.
    Stdio(Vec<String>),
    /// `--http URL`, unparsed (the config rules check it at load).
    Http(String),
}

/// The name of an ad-hoc server when `--name` does not give one.
pub(crate) const ADHOC_NAME: &str = "adhoc";

#[derive(Debug)]
pub(crate) struct Args {
    pub(crate) global: Global,
    pub(crate) command: Command,
}

/// Output format of `check-config` and `lock`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Human,
    Json,
    Github,
}

/// What `list` shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Show {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

#[derive(Debug)]
pub(crate) enum Command {
    CheckConfig {
        format: Format,
    },
    Lock {
        servers: Vec<String>,
        /// `--check`: compare with the lock file instead of writing it.
        check: bool,
        format: Format,
    },
    List {
        servers: Vec<String>,
        show: Show,
    },
    Call {
        /// `mcp__server__tool`, or `server tool` as two words.
        target: Target,
        /// `key=value` and `key:=json` words.
        pairs: Vec<String>,
        /// `--args`: a JSON object, `-` for stdin or `@file`.
        args: Option<String>,
        save: Option<PathBuf>,
    },
    Batch,
    Login {
        server: String,
        no_browser: bool,
        refresh: bool,
    },
    Logout {
        server: String,
    },
    Discover {
        server: String,
    },
    Status,
    Resources {
        server: String,
    },
    Read {
        server: String,
        uri: String,
        save: Option<PathBuf>,
    },
    Prompts {
        server: String,
    },
    Prompt {
        server: String,
        name: String,
        pairs: Vec<String>,
    },
    Completions {
        shell: Shell,
    },
    /// Hidden: the server names of the config in effect, for completion.
    Servers,
    /// Hidden: the man page, generated from the help texts.
    Man,
    Serve(Box<ServeOptions>),
}

/// What `serve` was given.
#[derive(Debug, Default)]
pub(crate) struct ServeOptions {
    /// `--listen ADDR:PORT`: the HTTP front instead of stdio.
    pub(crate) listen: Option<String>,
    /// `--servers a,b`: only these of the allowed servers.
    pub(crate) servers: Vec<String>,
    /// `--token-env VAR`: the HTTP front's bearer token from `VAR`.
    pub(crate) token_env: Option<String>,
    /// `--allow-origin ORIGIN` (repeatable).
    pub(crate) origins: Vec<String>,
    /// `--approve PATTERN` other than `execute` (repeatable).
    pub(crate) approve: Vec<String>,
    pub(crate) dry_run: bool,
}

/// A shell `completions` writes a script for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl Shell {
    pub(crate) const ALL: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Shell::Bash => "bash",
            Shell::Zsh => "zsh",
            Shell::Fish => "fish",
        }
    }
}

/// The tool a `call` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Qualified(String),
    Split { server: String, tool: String },
}

/// A command: its name, its one-line summary for the top-level help and
/// its own help text, side by side, so that adding a command is one
/// variant and one arm in each method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmd {
    CheckConfig,
    Lock,
    List,
    Call,
    Resources,
    Read,
    Prompts,
    Prompt,
    Batch,
    Login,
    Logout,
    Discover,
    Status,
    Completions,
    Help,
    /// Hidden: prints the server names of the config, one a line.
    Servers,
    /// Hidden: prints the man page.
    Man,
    Serve,
}

impl Cmd {
    /// Every command, in the order the help lists them (the hidden ones
    /// last).
    pub(crate) const ALL: [Cmd; 18] = [
        Cmd::CheckConfig,
        Cmd::Lock,
        Cmd::List,
        Cmd::Call,
        Cmd::Resources,
        Cmd::Read,
        Cmd::Prompts,
        Cmd::Prompt,
        Cmd::Batch,
        Cmd::Serve,
        Cmd::Login,
        Cmd::Logout,
        Cmd::Discover,
        Cmd::Status,
        Cmd::Completions,
        Cmd::Help,
        Cmd::Servers,
        Cmd::Man,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Cmd::CheckConfig => "check-config",
            Cmd::Lock => "lock",
            Cmd::List => "list",
            Cmd::Call => "call",
            Cmd::Resources => "resources",
            Cmd::Read => "read",
            Cmd::Prompts => "prompts",
            Cmd::Prompt => "prompt",
            Cmd::Batch => "batch",
            Cmd::Login => "login",
            Cmd::Logout => "logout",
            Cmd::Discover => "discover",
            Cmd::Status => "status",
            Cmd::Completions => "completions",
            Cmd::Help => "help",
            Cmd::Servers => "__servers",
            Cmd::Man => "__man",
            Cmd::Serve => "serve",
        }
    }

    /// Commands for tools, not people: neither the help, the man page nor
    /// completion shows them.
    pub(crate) fn hidden(self) -> bool {
        matches!(self, Cmd::Servers | Cmd::Man)
    }

    fn parse(name: &str) -> Option<Cmd> {
        Cmd::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The line in the top-level help's COMMANDS section.
    pub(crate) fn summary(self) -> &'static str {
        match self {
            Cmd::CheckConfig => "Validate .mcp.json and show every server",
            Cmd::Lock => {
                "Pin what servers expose in .mcp.lock.json (--check: drift)"
            }
            Cmd::List => {
                "List the tools (resources, prompts) of allowed servers"
            }
            Cmd::Call => "Call one tool",
            Cmd::Resources => {
                "List one server's resources and resource templates"
            }
            Cmd::Read => "Read one resource",
            Cmd::Prompts => "List one server's prompts",
            Cmd::Prompt => "Get one prompt",
            Cmd::Batch => {
                "Run JSON Lines requests from stdin over reused sessions"
            }
            Cmd::Login => "Log in to an OAuth-protected HTTP server",
            Cmd::Logout => "Remove a server's stored credential",
            Cmd::Discover => "Show a server's OAuth metadata (read-only)",
            Cmd::Status => "Show which servers have a stored credential",
            Cmd::Completions => "Print a shell completion script",
            Cmd::Help => "Show the help of a command",
            Cmd::Servers => "Print the configured server names",
            Cmd::Man => "Print the man page",
            Cmd::Serve => {
                "Be one MCP server for allowed servers, every call governed"
            }
        }
    }

    /// The command's own help text (`rivumi-mcp CMD --help`).
    fn usage(self) -> &'static str {
        match self {
            Cmd::CheckConfig => USAGE_CHECK,
            Cmd::Lock => USAGE_LOCK,
            Cmd::List => USAGE_LIST,
            Cmd::Call => USAGE_CALL,
            Cmd::Resources => USAGE_RESOURCES,
            Cmd::Read => USAGE_READ,
            Cmd::Prompts => USAGE_PROMPTS,
            Cmd::Prompt => USAGE_PROMPT,
            Cmd::Batch => USAGE_BATCH,
            Cmd::Login => USAGE_LOGIN,
            Cmd::Logout => USAGE_LOGOUT,
            Cmd::Discover => USAGE_DISCOVER,
            Cmd::Status => USAGE_STATUS,
            Cmd::Completions => USAGE_COMPLETIONS,
            Cmd::Help => USAGE_HELP,
            Cmd::Servers => USAGE_SERVERS,
            Cmd::Man => USAGE_MAN,
            Cmd::Serve => USAGE_SERVE,
        }
    }

    /// Commands that start servers (deadlines, limits, journal apply).
    fn starts_servers(self) -> bool {
        matches!(
            self,
            Cmd::List
                | Cmd::Lock
                | Cmd::Call
                | Cmd::Resources
                | Cmd::Read
                | Cmd::Prompts
                | Cmd::Prompt
                | Cmd::Batch
                | Cmd::Login
                | Cmd::Discover
                | Cmd::Serve
        )
    }

    /// Commands that go through the executor (hooks, approval, bounds).
    fn executes(self) -> bool {
        matches!(
            self,
            Cmd::Call | Cmd::Read | Cmd::Prompt | Cmd::Batch | Cmd::Serve
        )
    }

    /// Commands that speak MCP to a server (and so may step up).
    fn speaks_mcp(self) -> bool {
        self.starts_servers() && !matches!(self, Cmd::Login | Cmd::Discover)
    }

    /// Commands that take an ad-hoc server (`--stdio`, `--http`): those
    /// that speak MCP, but `lock` (a lock pins a project's servers).
    fn takes_adhoc(self) -> bool {
        self.speaks_mcp() && self != Cmd::Lock
    }
}

impl std::fmt::Display for Cmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which commands an option applies to.
#[derive(Clone, Copy, Debug)]
enum Applies {
    Every,
    /// [`Cmd::starts_servers`].
    Runs,
    /// [`Cmd::executes`].
    Execs,
    /// [`Cmd::speaks_mcp`].
    Mcp,
    /// [`Cmd::takes_adhoc`].
    Adhoc,
    Only(&'static [Cmd]),
}

impl Applies {
    fn to(self, c: Cmd) -> bool {
        match self {
            Applies::Every => true,
            Applies::Runs => c.starts_servers(),
            Applies::Execs => c.executes(),
            Applies::Mcp => c.speaks_mcp(),
            Applies::Adhoc => c.takes_adhoc(),
            Applies::Only(cmds) => cmds.contains(&c),
        }
    }
}

/// Every option, by meaning; the table below gives its spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flag {
    Config,
    Json,
    Verbose,
    Quiet,
    Strict,
    Format,
    Timeout,
    StartupTimeout,
    MaxMessage,
    Tools,
    Resources,
    Prompts,
    All,
    Args,
    Yes,
    Approve,
    ReadOnly,
    PreToolHook,
    HookTimeout,
    MaxOutput,
    Journal,
    Raw,
    Refresh,
    StepUp,
    Protocol,
    NoBrowser,
    Save,
    Lock,
    Unlocked,
    Check,
    Stdio,
    Http,
    Name,
    Elicit,
    Answer,
    SamplingCommand,
    Root,
    LogLevel,
    Listen,
    Servers,
    TokenEnv,
    AllowOrigin,
    DryRun,
}

/// What an option's value is, for completion: which words to offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ValueKind {
    /// A flag without a value.
    None,
    /// A number, a command line, JSON: nothing to offer.
    Free,
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
    /// A file path.
    File,
    /// A directory path.
    Dir,
}

const FORMATS: &[&str] = &["human", "json", "github"];
const APPROVE_CLASSES: &[&str] = &["execute"];

impl Flag {
    /// The kind of value the option takes. No catch-all arm: a new option
    /// must say whether its values form a fixed set (completion offers
    /// them) or name a path.
    pub(crate) fn value_kind(self) -> ValueKind {
        match self {
            Flag::Format => ValueKind::Choice(FORMATS),
            Flag::Protocol => ValueKind::Choice(&crate::mcp::Choice::NAMES),
            Flag::Approve => ValueKind::Choice(APPROVE_CLASSES),
            Flag::Elicit => ValueKind::Choice(&ELICIT_MODES),
            Flag::LogLevel => ValueKind::Choice(&LOG_LEVELS),
            Flag::Root => ValueKind::Dir,
            Flag::Answer | Flag::SamplingCommand => ValueKind::Free,
            Flag::Config | Flag::Journal | Flag::Lock => ValueKind::File,
            Flag::Save => ValueKind::Dir,
            Flag::Timeout
            | Flag::StartupTimeout
            | Flag::MaxMessage
            | Flag::Args
            | Flag::PreToolHook
            | Flag::HookTimeout
            | Flag::MaxOutput
            | Flag::Stdio
            | Flag::Http
            | Flag::Name
            | Flag::Listen
            | Flag::Servers
            | Flag::TokenEnv
            | Flag::AllowOrigin => ValueKind::Free,
            Flag::Json
            | Flag::Verbose
            | Flag::Quiet
            | Flag::Strict
            | Flag::Tools
            | Flag::Resources
            | Flag::Prompts
            | Flag::All
            | Flag::Yes
            | Flag::ReadOnly
            | Flag::Raw
            | Flag::Refresh
            | Flag::StepUp
            | Flag::Unlocked
            | Flag::Check
            | Flag::NoBrowser
            | Flag::DryRun => ValueKind::None,
        }
    }
}

/// One option: what it means, its names, whether it takes a value, and
/// the commands it applies to.
#[derive(Debug)]
pub(crate) struct Opt {
    flag: Flag,
    long: &'static str,
    short: Option<char>,
    value: bool,
    applies: Applies,
}

const fn opt(flag: Flag, long: &'static str, applies: Applies) -> Opt {
    Opt { flag, long, short: None, value: false, applies }
}

const fn valued(flag: Flag, long: &'static str, applies: Applies) -> Opt {
    Opt { flag, long, short: None, value: true, applies }
}

impl Opt {
    pub(crate) fn flag(&self) -> Flag {
        self.flag
    }

    pub(crate) fn long(&self) -> &'static str {
        self.long
    }

    pub(crate) fn short(&self) -> Option<char> {
        self.short
    }

    pub(crate) fn takes_value(&self) -> bool {
        self.value
    }

    pub(crate) fn applies_to(&self, c: Cmd) -> bool {
        self.applies.to(c)
    }

    /// Whether every command accepts it (the options of the top-level
    /// help, which may stand before the command).
    pub(crate) fn global(&self) -> bool {
        matches!(self.applies, Applies::Every)
    }
}

/// Every option, in the order of the table (for completion and the man
/// page; `-h`/`--help` and `-V`/`--version` are not in it).
pub(crate) fn options() -> &'static [Opt] {
    OPTS
}

const OPTS: &[Opt] = &[
    Opt { short: Some('c'), ..valued(Flag::Config, "config", Applies::Every) },
    opt(Flag::Json, "json", Applies::Every),
    Opt { short: Some('v'), ..opt(Flag::Verbose, "verbose", Applies::Every) },
    Opt { short: Some('q'), ..opt(Flag::Quiet, "quiet", Applies::Every) },
    opt(Flag::Strict, "strict", Applies::Only(&[Cmd::CheckConfig])),
    valued(
        Flag::Format,
        "format",
        Applies::Only(&[Cmd::CheckConfig, Cmd::Lock]),
    ),
    valued(Flag::Timeout, "timeout", Applies::Runs),
    valued(Flag::StartupTimeout, "startup-timeout", Applies::Runs),
    valued(Flag::MaxMessage, "max-message", Applies::Runs),
    opt(Flag::Tools, "tools", Applies::Only(&[Cmd::List])),
    opt(Flag::Resources, "resources", Applies::Only(&[Cmd::List])),
    opt(Flag::Prompts, "prompts", Applies::Only(&[Cmd::List])),
    opt(Flag::All, "all", Applies::Only(&[Cmd::List])),
    valued(Flag::Args, "args", Applies::Only(&[Cmd::Call])),
    Opt { short: Some('y'), ..opt(Flag::Yes, "yes", Applies::Only(APPROVES)) },
    valued(Flag::Approve, "approve", Applies::Only(APPROVES)),
    opt(Flag::ReadOnly, "read-only", Applies::Execs),
    valued(Flag::PreToolHook, "pre-tool-hook", Applies::Execs),
    valued(Flag::HookTimeout, "hook-timeout", Applies::Execs),
    valued(Flag::MaxOutput, "max-output", Applies::Execs),
    valued(Flag::Journal, "journal", Applies::Runs),
    opt(Flag::Raw, "raw", Applies::Every),
    opt(Flag::Refresh, "refresh", Applies::Only(&[Cmd::Login])),
    opt(Flag::StepUp, "step-up", Applies::Mcp),
    valued(Flag::Protocol, "protocol", Applies::Mcp),
    opt(Flag::NoBrowser, "no-browser", Applies::Only(&[Cmd::Login])),
    valued(Flag::Save, "save", Applies::Only(&[Cmd::Call, Cmd::Read])),
    valued(Flag::Lock, "lock", Applies::Only(LOCKED)),
    opt(Flag::Unlocked, "unlocked", Applies::Only(LOCKED.split_at(1).1)),
    opt(Flag::Check, "check", Applies::Only(&[Cmd::Lock])),
    valued(Flag::Stdio, "stdio", Applies::Adhoc),
    valued(Flag::Http, "http", Applies::Adhoc),
    valued(Flag::Name, "name", Applies::Adhoc),
    valued(Flag::Elicit, "elicit", Applies::Mcp),
    valued(Flag::Answer, "answer", Applies::Mcp),
    valued(Flag::SamplingCommand, "sampling-command", Applies::Mcp),
    valued(Flag::Root, "root", Applies::Mcp),
    valued(Flag::LogLevel, "log-level", Applies::Mcp),
    valued(Flag::Listen, "listen", Applies::Only(&[Cmd::Serve])),
    valued(Flag::Servers, "servers", Applies::Only(&[Cmd::Serve])),
    valued(Flag::TokenEnv, "token-env", Applies::Only(&[Cmd::Serve])),
    valued(Flag::AllowOrigin, "allow-origin", Applies::Only(&[Cmd::Serve])),
    opt(Flag::DryRun, "dry-run", Applies::Only(&[Cmd::Serve])),
];

/// The commands that take `--yes` and `--approve`.
const APPROVES: &[Cmd] = &[Cmd::Call, Cmd::Batch, Cmd::Serve];

/// The commands a lock file applies to: `lock` itself, then those that
/// enforce it (and so take `--unlocked`).
const LOCKED: &[Cmd] = &[
    Cmd::Lock,
    Cmd::Call,
    Cmd::Read,
    Cmd::Prompt,
    Cmd::Batch,
    Cmd::List,
    Cmd::Serve,
];

const USAGE_HEAD: &str = "\
rivumi-mcp: a command-line client for the Model Context Protocol

USAGE:
    rivumi-mcp [OPTIONS] <COMMAND> [ARGS...]

COMMANDS:
";

const USAGE_TAIL: &str = "\
OPTIONS (any command, before or after it):
    -c, --config PATH   Config file (default: ./.mcp.json, never a parent)
        --json          Machine-readable output; errors as JSON on stderr
    -v, --verbose       Say more on stderr (server stderr, notifications)
    -q, --quiet         Only errors on stderr
        --raw           Print server text as sent, even on a terminal
    -h, --help          Show help (of a command: rivumi-mcp list --help)
    -V, --version       Show the version

OPTIONS of the commands that speak to servers (list, call, resources, read,
prompts, prompt, batch, lock):
        --step-up       When a server asks for (more) authorization, log in
                        there and then
        --protocol auto|modern|legacy
                        Which MCP era to speak, for every server: auto
                        (default) finds out; modern is 2026-07-28 only;
                        legacy is the initialize handshake (2025-11-25 …)

Servers start only when named in RIVUMI_MCP_ALLOWLIST (comma-separated).
Exit codes: 0 ok, 1 negative result, 2 usage, 3 refused, 4 server error,
5 timeout, 6 authentication required, 7 denied, 8 output truncated by
--max-output, 130/143 interrupted.
";

const USAGE_HELP: &str = "\
rivumi-mcp help: show the help of a command

USAGE:
    rivumi-mcp help [COMMAND]
";

const USAGE_COMPLETIONS: &str = "\
rivumi-mcp completions: print a shell completion script

USAGE:
    rivumi-mcp completions <bash|zsh|fish>

Completes commands, options, option values from a fixed set, paths, and
server names from the config in effect (-c honoured), which it reads
without starting a server, contacting a URL or reading a credential.
Tool names are not completed: only a running server knows them.

EXAMPLES:
    source <(rivumi-mcp completions bash)
    rivumi-mcp completions zsh > ~/.zfunc/_rivumi-mcp
    rivumi-mcp completions fish > ~/.config/fish/completions/rivumi-mcp.fish
";

const USAGE_SERVERS: &str = "\
rivumi-mcp __servers: print the server names of the config, one a line
";

const USAGE_MAN: &str = "\
rivumi-mcp __man: print the man page (roff)
";

/// The top-level help: the commands from [`Cmd`], then the options.
fn top_usage() -> String {
    let mut t = USAGE_HEAD.to_string();
    for c in Cmd::ALL.into_iter().filter(|c| !c.hidden()) {
        t.push_str(&format!("    {:<14} {}\n", c.name(), c.summary()));
    }
    t.push('\n');
    t.push_str(USAGE_TAIL);
    t
}

const USAGE_CHECK: &str = "\
rivumi-mcp check-config: validate the configuration file

USAGE:
    rivumi-mcp check-config [--strict] [--format human|json|github]

Validates every server of the file (allowed or not), reports every
problem with its line:column and JSON pointer, then shows a table of
servers with their fingerprints. Starts nothing.

OPTIONS:
        --strict          Unknown keys and unset variables are errors
        --format FORMAT   human (default), json, or github (annotations)
        --json            Same as --format json

EXIT: 0 valid (warnings allowed), 1 invalid, 2 usage or unreadable file.

EXAMPLES:
    rivumi-mcp check-config
    rivumi-mcp check-config --format github -c .mcp.json
";

const USAGE_LOCK: &str = "\
rivumi-mcp lock: pin what servers expose, or check it has not drifted

USAGE:
    rivumi-mcp lock [SERVER...] [--lock PATH]
    rivumi-mcp lock --check [SERVER...] [--format human|json|github]

Starts the allowed servers (or the named ones) and writes everything
they show the model to .mcp.lock.json beside the config file: serverInfo,
protocol, instructions, and every tool, prompt, resource and resource
template definition, each with its SHA-256, plus the server's launch
fingerprint. The file is canonical JSON (same servers, same bytes): review
it and commit it. Rewriting it first prints what changed since.

With a lock file in place, call, batch, read and prompt refuse (exit 3)
an item whose definition differs from the lock, or is not in it; other
items keep working. --unlocked skips that for one command.

OPTIONS:
        --check           Compare instead of writing; exit 1 on drift
        --lock PATH       The lock file (default: beside the config)
        --format FORMAT   human (default), json, or github (annotations)
        --json            Same as --format json
        --timeout SECS    Per-request deadline (default 300)
        --startup-timeout SECS  Start-up deadline (default 30)

EXIT: 0 written or unchanged, 1 drift (--check), 3 refused (a broken lock
file, a server not allowed), see rivumi-mcp --help.

EXAMPLES:
    RIVUMI_MCP_ALLOWLIST=demo rivumi-mcp lock
    rivumi-mcp lock --check --format github
";

const USAGE_LIST: &str = "\
rivumi-mcp list: list what allowed servers offer

USAGE:
    rivumi-mcp list [SERVER...] [--tools|--resources|--prompts|--all]

Without SERVER, every allowed server is started (in parallel) and shown
in config order. Tools are shown as mcp__<server>__<tool> with their
classification: read (readOnlyHint true, not destructive) or execute.

OPTIONS:
        --tools               Tools (the default)
        --resources           Resources and resource templates
        --prompts             Prompts
        --all                 All three
        --timeout SECS        Per-request deadline (default 300)
        --startup-timeout SECS  Start-up deadline (default 30)
        --max-message BYTES   Largest message accepted (default 16M)
        --lock PATH           Mark items that drifted from this lock file
                              (default: .mcp.lock.json beside the config)
        --stdio CMDLINE       Run this server instead of a config file's
                              (one quoted word: 'CMD ARG...', split as a
                              shell splits words, but no shell runs)
        --http URL            Reach this Streamable HTTP server instead
        --name NAME           The ad-hoc server's name (default: adhoc)

AD-HOC SERVERS:
    With --stdio or --http, one server typed on the command line is used,
    called adhoc (or --name): no config file and no allowlist entry are
    needed, since you typed the command; every other rule applies (the
    sanitised environment, the URL rules, approval, the journal, the
    bounds). list, call, resources, read, prompts, prompt and batch take
    them.

EXAMPLES:
    RIVUMI_MCP_ALLOWLIST=demo rivumi-mcp list
    rivumi-mcp list demo --all --json
    rivumi-mcp list --stdio 'npx -y @modelcontextprotocol/server-filesystem@2025.8.21 .'
";

const USAGE_BATCH: &str = "\
rivumi-mcp batch: many requests over one session per server

USAGE:
    rivumi-mcp batch [OPTIONS] < requests.jsonl

Reads JSON Lines from stdin, one request each, and writes one JSON line
per input line, in input order, with the request's id and its result (as
call --json prints it) or an error. Servers start on first use and are
reused. A bad line gets an error result and the batch goes on.

REQUESTS:
    {\"id\": 1, \"tool\": \"mcp__demo__echo\", \"arguments\": {\"text\": \"hi\"}}
    {\"id\": 2, \"server\": \"demo\", \"tool\": \"echo\", \"arguments\": {}}
    {\"id\": 3, \"server\": \"demo\", \"read\": \"fixture://docs/readme\"}
    {\"id\": 4, \"server\": \"demo\", \"prompt\": \"greet\", \"arguments\": {}}
    {\"id\": 5, \"tool\": \"mcp__demo__book\", \"answers\": {\"seats\": \"2\"}}

A line's \"answers\" object answers the forms its request brings up, under
the rules of --answer (a string is typed by the form's schema), in place
of --answer; --elicit, --root, --sampling-command and --log-level apply
to the whole batch.

OPTIONS:
    -y, --yes                      Approve calls classified execute
        --approve execute          Same as --yes
        --read-only                Deny every call classified execute
        --pre-tool-hook CMD        Run CMD before every request (repeatable)
        --hook-timeout SECS        Deadline of each hook (default 10)
        --max-output BYTES         Cap each result (default 1M)
        --timeout SECS             Per-request deadline (default 300)
        --startup-timeout SECS     Start-up deadline (default 30)
        --max-message BYTES        Largest message accepted (default 16M)
        --journal PATH             Append JSONL events to PATH
        --lock PATH                The lock file (default: beside config)
        --unlocked                 Do not refuse items that drifted
        --step-up                  Log in when a server asks for more
        --protocol auto|modern|legacy  Which MCP era to speak
        --stdio CMDLINE            One server typed here, no config file
        --http URL                 One HTTP server typed here
        --name NAME                Its name in requests (default: adhoc)
        --elicit MODE              ask, decline, cancel or defaults
        --answer NAME=VALUE        Answer form field NAME (repeatable)

EXIT: 0 when every request succeeded, 1 when any failed.
";

const USAGE_SERVE: &str = "\
rivumi-mcp serve: one MCP server for every allowed server, every call governed

USAGE:
    rivumi-mcp serve [--servers a,b] [--listen 127.0.0.1:PORT] [OPTIONS]

Speaks MCP to its host (an agent, an editor, an SDK client) on stdin and
stdout, or over Streamable HTTP with --listen, in both eras (initialize
up to 2025-11-25, and 2026-07-28). Behind it are the allowed servers of
the config (RIVUMI_MCP_ALLOWLIST and pins as they are at start), started
on first use and closed when serve ends. The host sees tools and prompts
named SERVER__NAME and the servers' resources; every call, read and prompt
goes through the executor: the lock, pre-tool hooks, approval, the
output bound and the journal. A refused call is a tool result with
isError: true.

APPROVAL (a call classified execute):
    asked of the host (an elicitation form) when it declared elicitation;
    otherwise denied, unless --yes, or --approve names the tool.

OPTIONS:
        --servers a,b              Only these of the allowed servers
        --listen ADDR:PORT         Streamable HTTP on a loopback address
        --token-env VAR            HTTP bearer token from VAR (default: a
                                   new one, printed once on stderr)
        --allow-origin ORIGIN      Accept browser requests from ORIGIN
                                   (repeatable; default: none)
        --dry-run                  Print what would be exposed, then exit
    -y, --yes                      Approve every call classified execute
        --approve PATTERN          Approve the tools PATTERN names:
                                   SERVER__TOOL or mcp__SERVER__TOOL, *
                                   matching any run of characters
                                   (repeatable; 'execute' = --yes)
        --read-only                Deny every call classified execute
        --pre-tool-hook CMD        Run CMD before every call (repeatable)
        --hook-timeout SECS        Deadline of each hook (default 10)
        --max-output BYTES         Cap each result (default 1M)
        --timeout SECS             Per-request deadline (default 300)
        --startup-timeout SECS     Start-up deadline (default 30)
        --journal PATH             Append JSONL events to PATH
        --lock PATH                The lock file (default: beside config)
        --unlocked                 Do not refuse items that drifted
        --root DIR                 Roots for servers whose host declares none
        --sampling-command CMD     Sampling for servers whose host cannot

EXAMPLES:
    RIVUMI_MCP_ALLOWLIST=demo rivumi-mcp serve
    rivumi-mcp serve --dry-run --json
    rivumi-mcp serve --listen 127.0.0.1:8931 --token-env MY_TOKEN
";

const USAGE_LOGIN: &str = "\
rivumi-mcp login: log in to an OAuth-protected HTTP server

USAGE:
    rivumi-mcp login <SERVER> [--no-browser] [--timeout SECS]
    rivumi-mcp login <SERVER> --refresh

Runs the authorization-code flow with PKCE (S256) and state through a
loopback callback on 127.0.0.1, for the client configured in the server's
\"oauth\" block, and stores the token in the credential file (0600).
The URL is always printed; the browser is RIVUMI_MCP_BROWSER, else
xdg-open (open on macOS), run without a shell.

Without a browser, as the \"oauth\" block says: client_credentials (a
secret, or private_key_jwt with client_key_file), \"grant\": \"jwt_bearer\"
(a workload identity token from assertion_file or assertion_env_var) or
\"grant\": \"enterprise\" (an IdP token exchanged at idp_token_endpoint);
\"dpop\" binds the token to a key (RFC 9449).

OPTIONS:
        --no-browser      Only print the URL
        --refresh         Exchange the stored refresh token (never done
                          silently), storing the rotated one first
        --timeout SECS    How long to wait for the browser (default 300)
        --json            Print the outcome as JSON
";

const USAGE_LOGOUT: &str = "\
rivumi-mcp logout: remove a server's stored credential

USAGE:
    rivumi-mcp logout <SERVER>
";

const USAGE_DISCOVER: &str = "\
rivumi-mcp discover: show what a server says about its authorization

USAGE:
    rivumi-mcp discover <SERVER> [--json]

Sends one unauthenticated request, reads the 401's WWW-Authenticate, the
protected-resource metadata (RFC 9728) and each authorization server's
metadata (RFC 8414 / OpenID Connect), and prints them with a suggested
\"oauth\" block. Changes no file.
";

const USAGE_STATUS: &str = "\
rivumi-mcp status: stored credentials per HTTP server

USAGE:
    rivumi-mcp status [--json]

Shows, per HTTP server, whether a credential is stored, for which URL,
how it is obtained and presented (METHOD: the grant, the client
authentication, +dpop for a DPoP-bound token), and when it expires.
Never the token.
";

const USAGE_CALL: &str = "\
rivumi-mcp call: call one tool

USAGE:
    rivumi-mcp call mcp__<server>__<tool> [key=value | key:=json ...]
    rivumi-mcp call <server> <tool> [key=value | key:=json ...]

key=value is converted only to the type the tool's inputSchema declares
for key (a string property stays a string, even \"007\"), through anyOf,
oneOf, $ref, enum and const; when several fit, the most specific wins
(-v says so). key:=json takes raw JSON, key=@FILE a file's text,
key:=@FILE a file's JSON; \\@ and \\= keep a leading @ or = literal. A name
the schema does not list is an error; --args takes the whole arguments
object as is.

OPTIONS:
        --args JSON|-|@FILE   Arguments as a JSON object (- reads stdin)
    -y, --yes                 Approve a call classified execute
        --save DIR            Save images, audio and blobs (whole) into DIR
        --approve execute     Same as --yes
        --read-only           Deny the call if it is classified execute
        --pre-tool-hook CMD   Run CMD first; it can deny (repeatable)
        --hook-timeout SECS   Deadline of each hook (default 10)
        --max-output BYTES    Cap what is printed (default 1M)
        --journal PATH        Append JSONL events to PATH
        --raw                 Print server text as sent, even on a terminal
        --timeout SECS        Deadline of the call (default 300)
        --startup-timeout SECS  Start-up deadline (default 30)
        --lock PATH           The lock file (default: beside the config)
        --unlocked            Call even if the tool drifted from the lock
        --stdio CMDLINE       Run this server instead of a config file's
                              (one quoted word: 'CMD ARG...', split as a
                              shell splits words, but no shell runs)
        --http URL            Reach this Streamable HTTP server instead
        --name NAME           The ad-hoc server's name (default: adhoc)

WHAT A SERVER MAY ASK (every command that starts servers):
        --elicit MODE         Forms: ask (default on a terminal), decline
                              (default without one), cancel, defaults
        --answer NAME=VALUE   Answer form field NAME (typed by the schema,
                              NAME:=JSON as is; repeatable)
        --sampling-command CMD  Answer sampling/createMessage with CMD
                              (argv, no shell; request JSON on stdin,
                              CreateMessageResult JSON on stdout), after
                              approval (or --yes); also
                              RIVUMI_MCP_SAMPLING_COMMAND
        --root DIR            Offer DIR as a root (repeatable)
        --log-level LEVEL     Ask servers to log at LEVEL (debug … emergency)
                              and show their log lines on stderr

EXIT: 0 ok, 1 when the tool returned isError, 3 refused (not allowed, or
drifted from .mcp.lock.json), 8 when --max-output cut what was printed;
see rivumi-mcp --help.

EXAMPLES:
    rivumi-mcp call mcp__demo__echo text=hello
    rivumi-mcp call demo add a=1 b:=2 --yes
    rivumi-mcp call demo echo text=@note.txt
    echo '{\"text\":\"hi\"}' | rivumi-mcp call demo echo --args -
    rivumi-mcp call --http http://127.0.0.1:8000/mcp adhoc echo text=hi
";

/// The help lines of the ad-hoc server options, shared by the commands
/// whose own option list is short.
macro_rules! adhoc_help {
    () => {
        "
AD-HOC SERVER (instead of a config file):
        --stdio CMDLINE       Run this server ('CMD ARG...', split as a
                              shell splits words, but no shell runs)
        --http URL            Reach this Streamable HTTP server
        --name NAME           The ad-hoc server's name (default: adhoc)
"
    };
}

const USAGE_RESOURCES: &str = concat!(
    "\
rivumi-mcp resources: list one server's resources and templates

USAGE:
    rivumi-mcp resources <SERVER> [--json]
",
    adhoc_help!()
);

const USAGE_READ: &str = concat!(
    "\
rivumi-mcp read: read one resource

USAGE:
    rivumi-mcp read <SERVER> <URI> [--json] [--save DIR] [--unlocked]

Text contents are printed; binary contents are summarised. --save DIR
writes every content, text too, to a file named after the resource's name
or URI (extension kept, -2, -3, ... rather than overwriting).
",
    adhoc_help!()
);

const USAGE_PROMPTS: &str = concat!(
    "\
rivumi-mcp prompts: list one server's prompts

USAGE:
    rivumi-mcp prompts <SERVER> [--json]
",
    adhoc_help!()
);

const USAGE_PROMPT: &str = concat!(
    "\
rivumi-mcp prompt: get one prompt

USAGE:
    rivumi-mcp prompt <SERVER> <NAME> [key=value | key:=json ...] [--json]
                      [--unlocked]

Prompt arguments are strings (the protocol allows no other type): key:=json
sends the JSON's text, key=@FILE a file's text. Names the prompt does not
declare, and missing required ones, are errors before the request.
",
    adhoc_help!()
);

/// The help text of a command, or the top-level one.
pub(crate) fn usage(command: Option<Cmd>) -> String {
    match command {
        Some(c) if c != Cmd::Help => c.usage().to_string(),
        _ => top_usage(),
    }
}

/// Whether a failure should also be reported as a JSON object: `--json`,
/// or `--format json` where it applies (check-config, lock). Decided from
/// the raw words, since it must hold for errors of parsing itself.
pub(crate) fn wants_json_errors(argv: &[OsString]) -> bool {
    let has = |w: &str| argv.iter().any(|a| a == w);
    let format_json = has("--format=json")
        || argv.windows(2).any(|w| w[0] == "--format" && w[1] == "json");
    has("--json") || (format_json && (has("check-config") || has("lock")))
}

/// Parses the process arguments (without the program name).
pub(crate) fn parse<I>(args: I) -> Result<Parsed>
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    use lexopt::Arg::{Long, Short, Value};

    let mut p = lexopt::Parser::from_args(args);
    let mut command: Option<String> = None;
    let mut words: Vec<String> = vec![];
    let mut given: Vec<(&'static Opt, Option<String>)> = vec![];
    let (mut help, mut version) = (false, false);

    while let Some(arg) = p.next().map_err(lexerr)? {
        let opt = match arg {
            Short('h') | Long("help") => {
                help = true;
                continue;
            }
            Short('V') | Long("version") => {
                version = true;
                continue;
            }
            Value(v) => {
                let v = v.into_string().map_err(nonutf8)?;
                if command.is_none() {
                    command = Some(v);
                } else {
                    words.push(v);
                }
                continue;
            }
            Short(c) => {
                OPTS.iter().find(|o| o.short == Some(c)).ok_or_else(|| {
                    Error::usage(format!("unrecognized flag '-{c}'"))
                })?
            }
            Long(name) => {
                OPTS.iter().find(|o| o.long == name).ok_or_else(|| {
                    let names = OPTS.iter().map(|o| o.long);
                    let mut msg = format!("unrecognized flag '--{name}'");
                    if let Some(s) = suggest(name, names) {
                        msg.push_str(&format!("; did you mean '--{s}'?"));
                    }
                    Error::usage(msg)
                })?
            }
        };
        let value = if opt.value {
            let v = p.value().map_err(lexerr)?;
            Some(v.into_string().map_err(nonutf8)?)
        } else {
            None
        };
        given.push((opt, value));
    }

    let command = match command.as_deref().map(|c| (c, Cmd::parse(c))) {
        None => None,
        Some((_, Some(c))) => Some(c),
        Some((c, None)) => {
            let mut msg = format!("unrecognized command '{c}'");
            let names = Cmd::ALL.map(Cmd::name);
            if let Some(s) = suggest(c, names.iter().copied()) {
                msg.push_str(&format!("; did you mean '{s}'?"));
            }
            return Err(Error::usage(msg));
        }
    };
    if command == Some(Cmd::Help) {
        let topic =
            match words.first() {
                None => None,
                Some(t) => Some(Cmd::parse(t).ok_or_else(|| {
                    Error::usage(format!("no help for '{t}'"))
                })?),
            };
        return Ok(Parsed::Help(usage(topic)));
    }
    if help {
        return Ok(Parsed::Help(usage(command)));
    }
    if version {
        return Ok(Parsed::Version);
    }
    let Some(command) = command else {
        return Err(Error::usage(
            "no command given; try 'rivumi-mcp --help'".to_string(),
        ));
    };
    build(command, words, given)
}

fn lexerr(e: lexopt::Error) -> Error {
    Error::usage(e.to_string())
}

fn nonutf8(v: OsString) -> Error {
    Error::usage(format!("argument {v:?} is not valid UTF-8"))
}

/// Checks every given option applies to the command and assembles it.
fn build(
    command: Cmd,
    words: Vec<String>,
    given: Vec<(&'static Opt, Option<String>)>,
) -> Result<Parsed> {
    let mut g = Global::default();
    let mut format = None;
    let mut show = Show::default();
    let mut args_json = None;
    let mut yes = false;
    let mut no_browser = false;
    let mut refresh = false;
    let mut check = false;
    let mut adhoc_name = None;
    let mut serve = ServeOptions::default();

    let mut save = None;
    for (opt, value) in given {
        if !opt.applies.to(command) {
            return Err(Error::usage(format!(
                "flag '--{}' does not apply to '{command}'",
                opt.long
            )));
        }
        let value = value.unwrap_or_default();
        let flag = format!("--{}", opt.long);
        match opt.flag {
            Flag::Config => g.config = Some(PathBuf::from(value)),
            Flag::Json => g.json = true,
            Flag::Verbose => g.verbose = g.verbose.saturating_add(1),
            Flag::Quiet => g.quiet = true,
            Flag::Strict => g.strict = true,
            Flag::Format => {
                format = Some(match value.as_str() {
                    "human" => Format::Human,
                    "json" => Format::Json,
                    "github" => Format::Github,
                    v => {
                        return Err(Error::usage(format!(
                            "{flag}: unknown format '{v}' [pick from: {}]",
                            FORMATS.join(", ")
                        )));
                    }
                })
            }
            Flag::Timeout => g.timeout = Some(secs(&flag, &value)?),
            Flag::StartupTimeout => {
                g.startup_timeout = Some(secs(&flag, &value)?)
            }
            Flag::MaxMessage => g.max_message = Some(bytes(&flag, &value)?),
            Flag::Tools => show.tools = true,
            Flag::Resources => show.resources = true,
            Flag::Prompts => show.prompts = true,
            Flag::All => {
                show = Show { tools: true, resources: true, prompts: true }
            }
            Flag::Args => args_json = Some(value),
            Flag::Yes => yes = true,
            Flag::Approve if command == Cmd::Serve && value != "execute" => {
                crate::serve::check_pattern(&value)
                    .map_err(|e| Error::usage(format!("{flag}: {e}")))?;
                serve.approve.push(value);
            }
            Flag::Approve => {
                if !APPROVE_CLASSES.contains(&value.as_str()) {
                    return Err(Error::usage(format!(
                        "{flag}: unknown class '{value}' [pick from: {}]",
                        APPROVE_CLASSES.join(", ")
                    )));
                }
                yes = true;
            }
            Flag::ReadOnly => g.read_only = true,
            Flag::PreToolHook => g.hooks.push(value),
            Flag::HookTimeout => g.hook_timeout = Some(secs(&flag, &value)?),
            Flag::MaxOutput => g.max_output = Some(bytes(&flag, &value)?),
            Flag::Journal => g.journal = Some(PathBuf::from(value)),
            Flag::Raw => g.raw = true,
            Flag::NoBrowser => no_browser = true,
            Flag::Refresh => refresh = true,
            Flag::StepUp => g.step_up = true,
            Flag::Protocol => g.protocol =
                Some(crate::mcp::Choice::parse(&value).ok_or_else(|| {
                    Error::usage(format!(
                        "{flag}: unknown protocol '{value}' [pick from: {}]",
                        crate::mcp::Choice::NAMES.join(", ")
                    ))
                })?),
            Flag::Save => save = Some(PathBuf::from(value)),
            Flag::Lock => g.lock = Some(PathBuf::from(value)),
            Flag::Unlocked => g.unlocked = true,
            Flag::Check => check = true,
            Flag::Stdio | Flag::Http => {
                if g.adhoc.is_some() {
                    return Err(Error::usage(
                        "--stdio and --http name one server; give one of \
                         them once",
                    ));
                }
                let target = if opt.flag == Flag::Http {
                    AdhocTarget::Http(value)
                } else {
                    let argv = split_command(&value)
                        .map_err(|e| Error::usage(format!("{flag}: {e}")))?;
                    AdhocTarget::Stdio(argv)
                };
                let name = ADHOC_NAME.to_string();
                g.adhoc = Some(Adhoc { name, target });
            }
            Flag::Name => {
                crate::config::check_name(&value)
                    .map_err(|e| Error::usage(format!("{flag}: {e}")))?;
                adhoc_name = Some(value);
            }
            Flag::Elicit => {
                g.client.elicit =
                    Some(Elicit::parse(&value).ok_or_else(|| {
                        Error::usage(format!(
                            "{flag}: unknown mode '{value}' [pick from: {}]",
                            ELICIT_MODES.join(", ")
                        ))
                    })?)
            }
            Flag::Answer => {
                if !value.contains('=')
                    || crate::elicit::word_name(&value).is_empty()
                {
                    return Err(Error::usage(format!(
                        "{flag}: '{value}' is not NAME=VALUE or NAME:=JSON"
                    )));
                }
                g.client.answers.push(value)
            }
            Flag::SamplingCommand => g.client.sampling_command = Some(value),
            Flag::Root => g.client.roots.push(PathBuf::from(value)),
            Flag::LogLevel => {
                if !LOG_LEVELS.contains(&value.as_str()) {
                    return Err(Error::usage(format!(
                        "{flag}: unknown level '{value}' [pick from: {}]",
                        LOG_LEVELS.join(", ")
                    )));
                }
                g.client.log_level = Some(value)
            }
            Flag::Listen => serve.listen = Some(value),
            Flag::Servers => serve.servers.extend(
                value.split(',').filter(|s| !s.is_empty()).map(String::from),
            ),
            Flag::TokenEnv => serve.token_env = Some(value),
            Flag::AllowOrigin => serve.origins.push(value),
            Flag::DryRun => serve.dry_run = true,
        }
    }
    match (&mut g.adhoc, adhoc_name) {
        (Some(a), Some(n)) => a.name = n,
        (None, Some(_)) => {
            return Err(Error::usage(
                "--name names an ad-hoc server: give --stdio or --http too",
            ));
        }
        _ => {}
    }
    if g.adhoc.is_some() && g.config.is_some() {
        return Err(Error::usage(
            "--stdio/--http replace the config file; drop -c/--config",
        ));
    }
    g.yes = yes;
    if g.json {
        if format.is_some_and(|f| f != Format::Json) {
            return Err(Error::usage("--json conflicts with --format"));
        }
        format = Some(Format::Json);
    }
    if show == Show::default() {
        show.tools = true;
    }
    let mut words = words.into_iter();
    let mut need = |what: &str| {
        words.next().ok_or_else(|| {
            Error::usage(format!(
                "missing argument {what}; try 'rivumi-mcp {command} --help'"
            ))
        })
    };
    let cmd = match command {
        Cmd::CheckConfig => {
            Command::CheckConfig { format: format.unwrap_or(Format::Human) }
        }
        Cmd::Lock => Command::Lock {
            servers: words.by_ref().collect(),
            check,
            format: format.unwrap_or(Format::Human),
        },
        Cmd::List => Command::List { servers: words.by_ref().collect(), show },
        Cmd::Call => {
            let first = need("TOOL")?;
            let target = if first.starts_with("mcp__") {
                Target::Qualified(first)
            } else {
                let tool = need("TOOL (after the server name)")?;
                Target::Split { server: first, tool }
            };
            let pairs: Vec<String> = words.by_ref().collect();
            if let Some(bad) = pairs.iter().find(|p| !p.contains('=')) {
                return Err(Error::usage(format!(
                    "argument '{bad}' is not key=value or key:=json"
                )));
            }
            Command::Call { target, pairs, args: args_json, save }
        }
        Cmd::Resources => Command::Resources { server: need("SERVER")? },
        Cmd::Read => {
            Command::Read { server: need("SERVER")?, uri: need("URI")?, save }
        }
        Cmd::Prompts => Command::Prompts { server: need("SERVER")? },
        Cmd::Batch => Command::Batch,
        Cmd::Login => {
            Command::Login { server: need("SERVER")?, no_browser, refresh }
        }
        Cmd::Logout => Command::Logout { server: need("SERVER")? },
        Cmd::Discover => Command::Discover { server: need("SERVER")? },
        Cmd::Status => Command::Status,
        Cmd::Completions => {
            let word = need("SHELL (bash, zsh or fish)")?;
            let shell = Shell::ALL
                .into_iter()
                .find(|s| s.name() == word)
                .ok_or_else(|| {
                    Error::usage(format!(
                        "unknown shell '{word}' [pick from: bash, zsh, fish]"
                    ))
                })?;
            Command::Completions { shell }
        }
        Cmd::Servers => Command::Servers,
        Cmd::Man => Command::Man,
        Cmd::Serve => Command::Serve(Box::new(serve)),

        Cmd::Prompt => {
            let server = need("SERVER")?;
            let name = need("NAME")?;
            let pairs: Vec<String> = words.by_ref().collect();
            if let Some(bad) = pairs.iter().find(|p| !p.contains('=')) {
                return Err(Error::usage(format!(
                    "argument '{bad}' is not key=value"
                )));
            }
            Command::Prompt { server, name, pairs }
        }
        Cmd::Help => unreachable!("help is answered before build"),
    };
    if let Some(extra) = words.next() {
        return Err(Error::usage(format!(
            "unexpected argument '{extra}' for '{command}'"
        )));
    }
    Ok(Parsed::Run(Box::new(Args { global: g, command: cmd })))
}

fn secs(flag: &str, v: &str) -> Result<Duration> {
    deadline::parse_seconds(v)
        .map_err(|e| Error::usage(format!("{flag}: {e}")))
}

/// Parses a byte count with an optional K/M/G suffix (powers of 1024).
fn bytes(flag: &str, v: &str) -> Result<usize> {
    let (num, mul) = match v.char_indices().last() {
        Some((i, 'k' | 'K')) => (&v[..i], 1 << 10),
        Some((i, 'm' | 'M')) => (&v[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&v[..i], 1 << 30),
        _ => (v, 1),
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .filter(|&n| n >= 1024)
        .ok_or_else(|| {
            Error::usage(format!(
                "{flag}: '{v}' is not a size of at least 1024 bytes \
                 (suffixes K, M, G allowed)"
            ))
        })
}

/// The levels of `logging/setLevel` (RFC 5424 names).
pub(crate) const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];
/// The choices of `--elicit`.
pub(crate) const ELICIT_MODES: [&str; 4] =
    ["ask", "decline", "cancel", "defaults"];

/// `--elicit`: how forms are answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elicit {
    /// Ask on the terminal (the default when there is one).
    Ask,
    Decline,
    Cancel,
    /// Every field without an answer takes its schema default (SEP-1034).
    Defaults,
}

impl Elicit {
    pub(crate) fn parse(s: &str) -> Option<Elicit> {
        Some(match s {
            "ask" => Elicit::Ask,
            "decline" => Elicit::Decline,
            "cancel" => Elicit::Cancel,
            "defaults" => Elicit::Defaults,
            _ => return None,
        })
    }
}

/// The operator's options for server requests, as the command line and
/// environment give them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Options {
    pub(crate) elicit: Option<Elicit>,
    /// `--answer NAME=VALUE` words, in order.
    pub(crate) answers: Vec<String>,
    pub(crate) roots: Vec<PathBuf>,
    pub(crate) sampling_command: Option<String>,
    pub(crate) log_level: Option<String>,
}

/// Splits a command line typed by the operator (a hook, `--stdio`) into
/// an argv: whitespace separates words,
/// single and double quotes group them, backslash escapes the next
/// character. Nothing is expanded; no shell is involved.
pub(crate) fn split_command(
    s: &str,
) -> std::result::Result<Vec<String>, String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                cur.push(chars.next().ok_or("trailing backslash")?);
                in_word = true;
            }
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("unterminated quote".to_string());
    }
    if in_word {
        out.push(cur);
    }
    if out.is_empty() {
        return Err("empty command".to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn splits_commands_without_a_shell() {
        assert_eq!(split_command("a b  c").unwrap(), ["a", "b", "c"]);
        assert_eq!(
            split_command(r#"sh -c 'echo $HOME; exit 2' "x y" z\ w"#).unwrap(),
            ["sh", "-c", "echo $HOME; exit 2", "x y", "z w"]
        );
        assert!(split_command("'open").is_err());
        assert!(split_command("  ").is_err());
    }

    use super::*;

    fn parse_raw(s: &str) -> Result<Parsed> {
        parse(s.split_whitespace())
    }

    fn run(s: &str) -> Args {
        match parse_raw(s) {
            Ok(Parsed::Run(a)) => *a,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn options_before_or_after_the_command() {
        let a = run("--json list demo");
        let b = run("list demo --json");
        assert!(a.global.json && b.global.json);
        assert!(matches!(a.command, Command::List { ref servers, .. }
            if servers == &["demo"]));
    }

    #[test]
    fn call_forms() {
        let a = run("call mcp__s__t a=1 b:=2");
        match a.command {
            Command::Call { target, pairs, .. } => {
                assert_eq!(target, Target::Qualified("mcp__s__t".into()));
                assert_eq!(pairs, ["a=1", "b:=2"]);
            }
            _ => panic!(),
        }
        let b = run("call s t -y");
        assert!(b.global.yes);
        assert!(matches!(
            b.command,
            Command::Call { target: Target::Split { .. }, .. }
        ));
        assert!(run("call s t --approve execute").global.yes);
        assert!(parse_raw("call s t --approve read").is_err());

        assert!(parse_raw("call s t notapair").is_err());
    }

    #[test]
    fn unknown_things_are_usage_errors_with_suggestions() {
        let e = parse_raw("lst").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unrecognized command 'lst'; did you mean 'list'?"
        );
        let e = parse_raw("list --jsn").unwrap_err();
        assert!(e.to_string().contains("did you mean '--json'"), "{e}");
        let e = parse_raw("call s t --tools").unwrap_err();
        assert!(e.to_string().contains("does not apply"), "{e}");
        assert!(parse_raw("").is_err());
    }

    #[test]
    fn help_and_version_short_circuit() {
        assert!(matches!(parse_raw("list --help"),
            Ok(Parsed::Help(h)) if h.contains("rivumi-mcp list")));
        assert!(matches!(parse_raw("help call"),
            Ok(Parsed::Help(h)) if h.contains("rivumi-mcp call")));
        assert!(matches!(parse_raw("--version"), Ok(Parsed::Version)));
    }

    #[test]
    fn json_errors_follow_json_and_check_config_format() {
        let w = |s: &str| {
            let v: Vec<OsString> =
                s.split_whitespace().map(OsString::from).collect();
            wants_json_errors(&v)
        };
        assert!(w("list --json"));
        assert!(w("check-config --format json"));
        assert!(!w("list --format json"));
        assert!(!w("list"));
    }

    #[test]
    fn lock_options() {
        let a = run("lock --check a b --format github --lock x.json");
        assert_eq!(a.global.lock, Some(PathBuf::from("x.json")));
        assert!(matches!(a.command, Command::Lock {
            ref servers, check: true, format: Format::Github
        } if servers == &["a", "b"]));
        assert!(run("call s t --unlocked").global.unlocked);
        assert!(run("list --lock l.json").global.lock.is_some());
        let e = parse_raw("lock --unlocked").unwrap_err().to_string();
        assert!(e.contains("'--unlocked' does not apply to 'lock'"), "{e}");
        assert!(parse_raw("list --check").is_err());
        assert!(parse_raw("status --lock x").is_err());
        let v: Vec<OsString> =
            ["lock", "--format", "json"].map(OsString::from).to_vec();
        assert!(wants_json_errors(&v));
    }

    #[test]
    fn values_are_validated() {
        assert!(parse_raw("list --timeout 0").is_err());
        assert!(parse_raw("list --max-message 1").is_err());
        assert_eq!(
            run("list --max-message 2M").global.max_message,
            Some(2 << 20)
        );
        assert!(parse_raw("check-config --format xml").is_err());
    }
}
