//! The option table: every option once, with its spellings, its value,
//! its description, the commands it applies to and where it may stand.
//! The parser, every `--help`, the man page and the completion scripts
//! read this table and nothing else.

use super::cmds::Cmd;
use crate::ask::{Elicit, LogLevel};
use crate::cli::Format;

/// Every option, by meaning; [`OPTS`] gives its spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flag {
    Config,
    Json,
    Verbose,
    Quiet,
    Raw,
    Strict,
    Format,
    Tools,
    Resources,
    Prompts,
    All,
    Check,
    Args,
    Yes,
    Approve,
    Save,
    Task,
    Detach,
    NoBrowser,
    Device,
    Refresh,
    Lock,
    Unlocked,
    ReadOnly,
    PreToolHook,
    HookTimeout,
    MaxOutput,
    Journal,
    Timeout,
    StartupTimeout,
    MaxMessage,
    StepUp,
    Protocol,
    Stdio,
    Http,
    Name,
    Elicit,
    Answer,
    SamplingCommand,
    Root,
    NoSandbox,
    NoDaemon,
    Foreground,
    Idle,
    Output,
    Grep,
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
    /// One of a fixed set of words (the type's `FromStr` takes them).
    Choice(&'static [&'static str]),
    /// A file path.
    File,
    /// A directory path.
    Dir,
}

/// Which commands an option applies to.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Applies {
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

/// The heading a command's help lists an option under, in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Group {
    /// The command's own options.
    Command,
    /// The executor: approval, hooks, output bounds, the journal.
    Exec,
    /// Deadlines, message bounds and the journal.
    Limits,
    /// Which server, and how to speak to it.
    Server,
    /// What a server may ask of the operator.
    Asks,
    /// Options of every command.
    Global,
}

impl Group {
    pub(crate) const ALL: [Group; 6] = [
        Group::Command,
        Group::Exec,
        Group::Limits,
        Group::Server,
        Group::Asks,
        Group::Global,
    ];

    pub(crate) fn heading(self) -> &'static str {
        match self {
            Group::Command => "OPTIONS",
            Group::Exec => "EXECUTOR",
            Group::Limits => "DEADLINES, LIMITS AND THE JOURNAL",
            Group::Server => "SERVER",
            Group::Asks => "WHAT A SERVER MAY ASK",
            Group::Global => "GLOBAL OPTIONS",
        }
    }
}

/// One option. Build a new one from [`BASE`] (see CONTRIBUTING.md, "To
/// add an option").
#[derive(Debug)]
pub(crate) struct Opt {
    /// What it means; the parser's `apply` matches on it.
    pub(crate) flag: Flag,
    /// `--long`, without the dashes.
    pub(crate) long: &'static str,
    pub(crate) short: Option<char>,
    /// The value's placeholder (`PATH`, `SECS`); `None`: a flag.
    pub(crate) value: Option<&'static str>,
    /// What completion offers for the value.
    pub(crate) kind: ValueKind,
    /// The description every help, the man page and fish show.
    pub(crate) help: &'static str,
    pub(crate) applies: Applies,
    pub(crate) group: Group,
}

/// The defaults a table row starts from: a flag of the command's own.
/// The commands `--refresh` applies to: `login` (redeem now) and those
/// that speak to servers (redeem when a token expired or is refused).
const REFRESHED: &[Cmd] = &[
    Cmd::Login,
    Cmd::Lock,
    Cmd::List,
    Cmd::Call,
    Cmd::Resources,
    Cmd::Read,
    Cmd::Prompts,
    Cmd::Prompt,
    Cmd::Batch,
];

pub(crate) const BASE: Opt = Opt {
    flag: Flag::Json,
    long: "",
    short: None,
    value: None,
    kind: ValueKind::None,
    help: "",
    applies: Applies::Every,
    group: Group::Command,
};

impl Opt {
    pub(crate) fn long(&self) -> &'static str {
        self.long
    }

    pub(crate) fn short(&self) -> Option<char> {
        self.short
    }

    pub(crate) fn takes_value(&self) -> bool {
        self.value.is_some()
    }

    pub(crate) fn kind(&self) -> ValueKind {
        self.kind
    }

    pub(crate) fn help(&self) -> &'static str {
        self.help
    }

    pub(crate) fn applies_to(&self, c: Cmd) -> bool {
        self.applies.to(c)
    }

    /// Whether every command accepts it (the options of the top-level
    /// help, which may stand before the command).
    pub(crate) fn global(&self) -> bool {
        matches!(self.applies, Applies::Every)
    }

    /// The left column of help: `-c, --config PATH`.
    pub(crate) fn spec(&self) -> String {
        let mut s = match self.short {
            Some(c) => format!("-{c}, --{}", self.long),
            None => format!("    --{}", self.long),
        };
        if let Some(v) = self.value {
            s.push(' ');
            s.push_str(v);
        }
        s
    }
}

/// Every option, in the order completion offers them and the man page
/// lists them (help groups them by [`Group`]; `-h`/`--help` and
/// `-V`/`--version` are answered before this table: see [`super::help`]).
pub(crate) fn options() -> &'static [Opt] {
    OPTS
}

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

/// The commands that take `--yes` and `--approve`.
const APPROVES: &[Cmd] = &[Cmd::Call, Cmd::Batch, Cmd::Serve];

const OPTS: &[Opt] = &[
    Opt {
        flag: Flag::Config,
        long: "config",
        short: Some('c'),
        value: Some("PATH"),
        kind: ValueKind::File,
        group: Group::Global,
        help: "Config file (default: ./.mcp.json, never a parent)",
        ..BASE
    },
    Opt {
        flag: Flag::Json,
        long: "json",
        group: Group::Global,
        help: "Machine-readable output; errors as JSON on stderr",
        ..BASE
    },
    Opt {
        flag: Flag::Verbose,
        long: "verbose",
        short: Some('v'),
        group: Group::Global,
        help: "Say more on stderr (server stderr, notifications)",
        ..BASE
    },
    Opt {
        flag: Flag::Quiet,
        long: "quiet",
        short: Some('q'),
        group: Group::Global,
        help: "Only errors on stderr",
        ..BASE
    },
    Opt {
        flag: Flag::Strict,
        long: "strict",
        applies: Applies::Only(&[Cmd::CheckConfig]),
        help: "Unknown keys and unset variables are errors",
        ..BASE
    },
    Opt {
        flag: Flag::Format,
        long: "format",
        value: Some("FORMAT"),
        kind: ValueKind::Choice(&Format::NAMES),
        applies: Applies::Only(&[Cmd::CheckConfig, Cmd::Lock]),
        help: "human (default), json (as --json), or github (annotations)",
        ..BASE
    },
    Opt {
        flag: Flag::Timeout,
        long: "timeout",
        value: Some("SECS"),
        kind: ValueKind::Free,
        applies: Applies::Runs,
        group: Group::Limits,
        help: "Per-request deadline (default 300; login: how long to wait \
               for the browser)",
        ..BASE
    },
    Opt {
        flag: Flag::StartupTimeout,
        long: "startup-timeout",
        value: Some("SECS"),
        kind: ValueKind::Free,
        applies: Applies::Runs,
        group: Group::Limits,
        help: "Start-up deadline (default 30)",
        ..BASE
    },
    Opt {
        flag: Flag::MaxMessage,
        long: "max-message",
        value: Some("BYTES"),
        kind: ValueKind::Free,
        applies: Applies::Runs,
        group: Group::Limits,
        help: "Largest message accepted (default 16M)",
        ..BASE
    },
    Opt {
        flag: Flag::Tools,
        long: "tools",
        applies: Applies::Only(&[Cmd::List]),
        help: "Tools (the default)",
        ..BASE
    },
    Opt {
        flag: Flag::Resources,
        long: "resources",
        applies: Applies::Only(&[Cmd::List]),
        help: "Resources and resource templates",
        ..BASE
    },
    Opt {
        flag: Flag::Prompts,
        long: "prompts",
        applies: Applies::Only(&[Cmd::List]),
        help: "Prompts",
        ..BASE
    },
    Opt {
        flag: Flag::All,
        long: "all",
        applies: Applies::Only(&[Cmd::List]),
        help: "Tools, resources and prompts",
        ..BASE
    },
    Opt {
        flag: Flag::Args,
        long: "args",
        value: Some("JSON|-|@FILE"),
        kind: ValueKind::Free,
        applies: Applies::Only(&[Cmd::Call]),
        help: "Arguments as a JSON object (- reads stdin, @FILE a file)",
        ..BASE
    },
    Opt {
        flag: Flag::Yes,
        long: "yes",
        short: Some('y'),
        applies: Applies::Only(APPROVES),
        group: Group::Exec,
        help: "Approve calls classified execute",
        ..BASE
    },
    Opt {
        flag: Flag::Approve,
        long: "approve",
        value: Some("PATTERN"),
        // Completion offers the one fixed word; patterns are free text.
        kind: ValueKind::Choice(&crate::cli::Approve::NAMES),
        applies: Applies::Only(APPROVES),
        group: Group::Exec,
        help: "Approve the tools whose qualified names match PATTERN \
               (mcp__fs__*, * and ? glob; repeatable; also \
               RIVUMI_MCP_APPROVE, comma-separated); execute is --yes",
        ..BASE
    },
    Opt {
        flag: Flag::Output,
        long: "output",
        value: Some("MODE"),
        kind: ValueKind::Choice(&crate::render::Output::NAMES),
        applies: Applies::Only(&[Cmd::Call]),
        help: "What to print: auto (structured content when there is \
               some, else the text), text, structured, json or raw",
        ..BASE
    },
    Opt {
        flag: Flag::Grep,
        long: "grep",
        value: Some("PATTERN"),
        kind: ValueKind::Free,
        applies: Applies::Only(&[Cmd::List]),
        help: "Only items whose name, title or description contains \
               PATTERN (any case; * and ? glob)",
        ..BASE
    },
    Opt {
        flag: Flag::ReadOnly,
        long: "read-only",
        applies: Applies::Execs,
        group: Group::Exec,
        help: "Deny every call classified execute",
        ..BASE
    },
    Opt {
        flag: Flag::PreToolHook,
        long: "pre-tool-hook",
        value: Some("CMD"),
        kind: ValueKind::Free,
        applies: Applies::Execs,
        group: Group::Exec,
        help: "Run CMD before every request; it can deny (repeatable; \
               split as sh splits words, no shell runs)",
        ..BASE
    },
    Opt {
        flag: Flag::HookTimeout,
        long: "hook-timeout",
        value: Some("SECS"),
        kind: ValueKind::Free,
        applies: Applies::Execs,
        group: Group::Exec,
        help: "Deadline of each hook (default 10)",
        ..BASE
    },
    Opt {
        flag: Flag::MaxOutput,
        long: "max-output",
        value: Some("BYTES"),
        kind: ValueKind::Free,
        applies: Applies::Execs,
        group: Group::Exec,
        help: "Cap what is printed of each result (default 1M)",
        ..BASE
    },
    Opt {
        flag: Flag::Journal,
        long: "journal",
        value: Some("PATH"),
        kind: ValueKind::File,
        applies: Applies::Runs,
        group: Group::Limits,
        help: "Append JSONL events to PATH",
        ..BASE
    },
    Opt {
        flag: Flag::Raw,
        long: "raw",
        group: Group::Global,
        help: "Print server text as sent, even on a terminal",
        ..BASE
    },
    Opt {
        flag: Flag::Refresh,
        long: "refresh",
        applies: Applies::Only(REFRESHED),
        help: "login: exchange the stored refresh token now, storing the \
               rotated one first; other commands: when the stored OAuth \
               token expired or is refused, redeem its refresh token once \
               (under the credential file's lock) and retry once, as \
               \"refresh\": \"auto\" does",
        ..BASE
    },
    Opt {
        flag: Flag::StepUp,
        long: "step-up",
        applies: Applies::Mcp,
        group: Group::Server,
        help: "When a server asks for (more) authorization, log in there \
               and then",
        ..BASE
    },
    Opt {
        flag: Flag::Protocol,
        long: "protocol",
        value: Some("ERA"),
        kind: ValueKind::Choice(&crate::mcp::Choice::NAMES),
        applies: Applies::Mcp,
        group: Group::Server,
        help: "Which MCP era to speak, for every server: auto (default) \
               finds out; modern is 2026-07-28 only; legacy is the \
               initialize handshake (2025-11-25 ...)",
        ..BASE
    },
    Opt {
        flag: Flag::NoBrowser,
        long: "no-browser",
        applies: Applies::Only(&[Cmd::Login]),
        help: "Only print the URL; read the redirect address (or the code) \
               pasted on stdin, or the callback",
        ..BASE
    },
    Opt {
        flag: Flag::Device,
        long: "device",
        applies: Applies::Only(&[Cmd::Login]),
        help: "Log in with a code entered on another device (RFC 8628)",
        ..BASE
    },
    Opt {
        flag: Flag::Save,
        long: "save",
        value: Some("DIR"),
        kind: ValueKind::Dir,
        applies: Applies::Only(&[Cmd::Call, Cmd::Read, Cmd::Skill]),
        help: "Save images, audio and blobs (whole; read: every content; \
               skill: every verified file) into DIR, never overwriting",
        ..BASE
    },
    Opt {
        flag: Flag::Task,
        long: "task",
        applies: Applies::Only(&[Cmd::Call]),
        help: "Run the call as a task and wait for it, polling (a tool \
               that requires tasks is always run so)",
        ..BASE
    },
    Opt {
        flag: Flag::Detach,
        long: "detach",
        applies: Applies::Only(&[Cmd::Call]),
        help: "Run the call as a task, print the server and task id and \
               exit at once (collect it with: task result SERVER ID)",
        ..BASE
    },
    Opt {
        flag: Flag::Lock,
        long: "lock",
        value: Some("PATH"),
        kind: ValueKind::File,
        applies: Applies::Only(LOCKED),
        help: "The lock file (default: .mcp.lock.json beside the config)",
        ..BASE
    },
    Opt {
        flag: Flag::Unlocked,
        long: "unlocked",
        applies: Applies::Only(LOCKED.split_at(1).1),
        help: "Do not refuse items that drifted from the lock file",
        ..BASE
    },
    Opt {
        flag: Flag::Check,
        long: "check",
        applies: Applies::Only(&[Cmd::Lock]),
        help: "Compare with the lock file instead of writing it; exit 1 on \
               drift",
        ..BASE
    },
    Opt {
        flag: Flag::Stdio,
        long: "stdio",
        value: Some("CMDLINE"),
        kind: ValueKind::Free,
        applies: Applies::Adhoc,
        group: Group::Server,
        help: "Run this server instead of a config file's (one quoted \
               word: 'CMD ARG...', split as sh splits words, no shell runs)",
        ..BASE
    },
    Opt {
        flag: Flag::Http,
        long: "http",
        value: Some("URL"),
        kind: ValueKind::Free,
        applies: Applies::Adhoc,
        group: Group::Server,
        help: "Reach this Streamable HTTP server instead of a config file's",
        ..BASE
    },
    Opt {
        flag: Flag::Name,
        long: "name",
        value: Some("NAME"),
        kind: ValueKind::Free,
        applies: Applies::Adhoc,
        group: Group::Server,
        help: "The ad-hoc server's name (default: adhoc)",
        ..BASE
    },
    Opt {
        flag: Flag::Elicit,
        long: "elicit",
        value: Some("MODE"),
        kind: ValueKind::Choice(&Elicit::NAMES),
        applies: Applies::Mcp,
        group: Group::Asks,
        help: "Forms: ask (default on a terminal), decline (default \
               without one), cancel, defaults",
        ..BASE
    },
    Opt {
        flag: Flag::Answer,
        long: "answer",
        value: Some("NAME=VALUE"),
        kind: ValueKind::Free,
        applies: Applies::Mcp,
        group: Group::Asks,
        help: "Answer form field NAME (typed by the schema, NAME:=JSON as \
               is; repeatable)",
        ..BASE
    },
    Opt {
        flag: Flag::SamplingCommand,
        long: "sampling-command",
        value: Some("CMD"),
        kind: ValueKind::Free,
        applies: Applies::Mcp,
        group: Group::Asks,
        help: "Answer sampling/createMessage with CMD (split as sh splits \
               words, no shell; request JSON on stdin, CreateMessageResult \
               JSON on stdout), after approval (or --yes); also \
               RIVUMI_MCP_SAMPLING_COMMAND",
        ..BASE
    },
    Opt {
        flag: Flag::Root,
        long: "root",
        value: Some("DIR"),
        kind: ValueKind::Dir,
        applies: Applies::Mcp,
        group: Group::Asks,
        help: "Offer DIR as a root (repeatable)",
        ..BASE
    },
    Opt {
        flag: Flag::LogLevel,
        long: "log-level",
        value: Some("LEVEL"),
        kind: ValueKind::Choice(&LogLevel::NAMES),
        applies: Applies::Mcp,
        group: Group::Asks,
        help: "Ask servers to log at LEVEL (debug ... emergency) and show \
               their log lines on stderr",
        ..BASE
    },
    Opt {
        flag: Flag::NoSandbox,
        long: "no-sandbox",
        value: Some("SERVER"),
        kind: ValueKind::Free,
        applies: Applies::Mcp,
        group: Group::Server,
        help: "Start SERVER without its sandbox block, for this run only \
               (journaled; repeatable)",
        ..BASE
    },
    Opt {
        flag: Flag::NoDaemon,
        long: "no-daemon",
        applies: Applies::Mcp,
        group: Group::Server,
        help: "Start servers here even when a daemon runs (rivumi-mcp \
               daemon --help; RIVUMI_MCP_DAEMON=off)",
        ..BASE
    },
    Opt {
        flag: Flag::Foreground,
        long: "foreground",
        applies: Applies::Only(&[Cmd::Daemon]),
        help: "daemon start: stay attached and log to stderr (debugging, \
               tests)",
        ..BASE
    },
    Opt {
        flag: Flag::Idle,
        long: "idle",
        value: Some("DURATION"),
        kind: ValueKind::Free,
        applies: Applies::Only(&[Cmd::Daemon]),
        help: "daemon start: retire a server nobody used for this long \
               (default 5m; seconds, or with s, m or h)",
        ..BASE
    },
    Opt {
        flag: Flag::Listen,
        long: "listen",
        value: Some("ADDR:PORT"),
        kind: ValueKind::Free,
        applies: Applies::Only(&[Cmd::Serve]),
        help: "Serve Streamable HTTP on this loopback address",
        ..BASE
    },
    Opt {
        flag: Flag::Servers,
        long: "servers",
        value: Some("A,B"),
        kind: ValueKind::Free,
        applies: Applies::Only(&[Cmd::Serve]),
        help: "Only these of the allowed servers",
        ..BASE
    },
    Opt {
        flag: Flag::TokenEnv,
        long: "token-env",
        value: Some("VAR"),
        kind: ValueKind::Free,
        applies: Applies::Only(&[Cmd::Serve]),
        help: "The HTTP bearer token from VAR (default: a new one, \
               printed once on stderr)",
        ..BASE
    },
    Opt {
        flag: Flag::AllowOrigin,
        long: "allow-origin",
        value: Some("ORIGIN"),
        kind: ValueKind::Free,
        applies: Applies::Only(&[Cmd::Serve]),
        help: "Accept HTTP requests from this browser origin (repeatable; \
               default: none)",
        ..BASE
    },
    Opt {
        flag: Flag::DryRun,
        long: "dry-run",
        applies: Applies::Only(&[Cmd::Serve]),
        help: "Print what would be exposed, then exit",
        ..BASE
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_complete_and_unique() {
        for (i, o) in OPTS.iter().enumerate() {
            assert!(!o.long.is_empty() && !o.help.is_empty(), "{o:?}");
            assert_eq!(
                o.value.is_none(),
                o.kind == ValueKind::None,
                "--{}: a value needs a placeholder and a kind",
                o.long
            );
            assert_eq!(o.global(), o.group == Group::Global, "--{}", o.long);
            for p in &OPTS[..i] {
                assert_ne!(p.flag, o.flag, "--{}", o.long);
                assert_ne!(p.long, o.long);
                assert!(o.short.is_none() || p.short != o.short);
            }
        }
    }
}
