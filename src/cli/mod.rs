//! The command line: one front door. Every option is defined once, in
//! [`opts`] (spelling, value, description, the commands it applies to,
//! where it may stand); every command once, in [`cmds`] (name, summary,
//! usage, prose, exit codes, examples). The parser ([`parse()`]), every
//! `--help` ([`help`]), the man page (`cmd::man`) and the completion
//! scripts (`cmd::completions`) are generated from those two tables.
//!
//! Parsing only validates what was typed; it reads no file, starts nothing
//! and looks at no environment variable (ripgrep's "low args" rule). An
//! option may stand before or after the command, as people type them
//! (`rivumi-mcp --json list` = `rivumi-mcp list --json`); an option that
//! does not apply to the command is an error, never silently ignored.
//! The options that run a program or choose the server are refused after
//! the first operand of `call`, `read` and `prompt`, whose operands a
//! script may take from a server; `--` ends the options.
//!
//! The values the parser produces are the owners' types (`ask::Options`,
//! `launch::Adhoc`, `catalog::Show`): nothing below `cmd/` imports `cli`.

mod cmds;
mod help;
mod opts;
mod parse;

use std::path::PathBuf;
use std::time::Duration;

pub(crate) use cmds::{Cmd, Operand};
pub(crate) use help::{HELP_FLAGS, exit_rows, option_groups, title, usage};
pub(crate) use opts::{Group, ValueKind, options};
pub(crate) use parse::{parse, wants_json_errors};

use crate::catalog::Show;

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Parsed {
    Help(String),
    Version,
    Run(Box<Args>),
}

#[derive(Debug)]
pub(crate) struct Args {
    pub(crate) global: Global,
    pub(crate) command: Command,
}

/// The operator's options that are not a command's own; `setup` turns
/// them into what the executor, the launcher and `ask` run with.
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
    /// `--refresh` on a command that speaks to servers: redeem the refresh
    /// token of an expired or refused token (as `"refresh": "auto"`).
    pub(crate) refresh: bool,
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
    pub(crate) adhoc: Option<crate::launch::Adhoc>,
    /// `--elicit`, `--answer`, `--root`, `--sampling-command`,
    /// `--log-level`: what servers may ask of this client.
    pub(crate) client: crate::ask::Options,
    /// `--approve PATTERN`: approve the tools whose qualified names match.
    pub(crate) approve: Vec<String>,
    /// `call --output`: what of a tool result is printed.
    pub(crate) output: crate::render::Output,
    /// `list --grep PATTERN`: only the items whose names, titles or
    /// descriptions contain it.
    pub(crate) grep: Option<String>,
    /// `--no-daemon`: start servers cold even when a daemon runs.
    pub(crate) no_daemon: bool,
    /// `--no-sandbox SERVER`: servers whose sandbox is lifted this run.
    pub(crate) no_sandbox: Vec<String>,
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
        /// `--task` or `--detach`.
        task: crate::executor::AsTask,
    },
    Task {
        sub: crate::task::Sub,
        server: String,
        /// Every action but `list` names a task.
        id: Option<String>,
    },
    Skills {
        servers: Vec<String>,
    },
    /// `skill get SERVER NAME`.
    Skill {
        server: String,
        name: String,
        save: Option<PathBuf>,
    },
    Batch,
    Login {
        server: String,
        no_browser: bool,
        refresh: bool,
        /// `--device`: the device authorization grant (RFC 8628).
        device: bool,
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
    /// Hidden: the man page, generated from the option and command
    /// tables.
    Man,
    Serve(Box<crate::serve::Options>),
}

/// The tool a `call` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Qualified(String),
    Split { server: String, tool: String },
}

/// Defines a choice type: its variants, the word for each (in order, as
/// `NAMES` for help and completion), `name()` and `FromStr`.
macro_rules! choice {
    ($(#[$doc:meta])* $name:ident, $what:literal,
     $($(#[$vdoc:meta])* $variant:ident = $word:literal),+ $(,)?) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            #[allow(dead_code)]
            pub(crate) const ALL: [$name; [$($word),+].len()] = [$($name::$variant),+];
            pub(crate) const NAMES: [&str; [$($word),+].len()] = [$($word),+];

            #[allow(dead_code)]
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $word),+
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;

            fn from_str(s: &str) -> Result<$name, String> {
                match s {
                    $($word => Ok($name::$variant),)+
                    _ => Err(format!(concat!("unknown ", $what, " '{}'"), s)),
                }
            }
        }
    };
}

choice!(
    /// Output format of `check-config` and `lock`.
    Format, "format",
    Human = "human",
    Json = "json",
    Github = "github",
);

choice!(
    /// A shell `completions` writes a script for.
    Shell, "shell",
    Bash = "bash",
    Zsh = "zsh",
    Fish = "fish",
);

choice!(
    /// `--approve CLASS`: the calls approved without asking.
    Approve, "class",
    Execute = "execute",
);
