//! The parser: one lexopt loop over the words, then each option applied
//! ([`apply`], one arm per [`Flag`]) and the command assembled from its
//! operands ([`command`], one arm per [`Cmd`]).

use std::ffi::OsString;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use super::cmds::Cmd;
use super::opts::{Flag, Opt, options};
use super::{Approve, Args, Command, Format, Global, Parsed, Shell, Target};
use crate::catalog::Show;
use crate::deadline;
use crate::error::{Error, Result};
use crate::executor::AsTask;
use crate::launch::{ADHOC_NAME, Adhoc, AdhocTarget};
use crate::suggest::suggest;

/// Whether a failure should also be reported as a JSON object: `--json`,
/// or `--format json` where it applies (check-config, lock). Decided from
/// the raw words, since it must hold for errors of parsing itself.
pub(crate) fn wants_json_errors(argv: &[OsString]) -> bool {
    let has = |w: &str| argv.iter().any(|a| a == w);
    let format_json = has("--format=json")
        || argv.windows(2).any(|w| w[0] == "--format" && w[1] == "json");
    has("--json") || (format_json && (has("check-config") || has("lock")))
}

/// An option as typed: which, its value, whether it was one word with
/// its value (`--opt=VALUE`, `-cPATH`), and whether an operand came
/// before it.
struct Given {
    opt: &'static Opt,
    value: Option<String>,
    glued: bool,
    after_operand: bool,
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
    let mut given: Vec<Given> = vec![];
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
                options().iter().find(|o| o.short == Some(c)).ok_or_else(
                    || Error::usage(format!("unrecognized flag '-{c}'")),
                )?
            }
            Long(name) => {
                options().iter().find(|o| o.long == name).ok_or_else(|| {
                    let names = options().iter().map(|o| o.long);
                    let mut msg = format!("unrecognized flag '--{name}'");
                    if let Some(s) = suggest(name, names) {
                        msg.push_str(&format!("; did you mean '--{s}'?"));
                    }
                    Error::usage(msg)
                })?
            }
        };
        let (value, glued) = match opt.value {
            Some(_) => {
                let (v, glued) = match p.optional_value() {
                    Some(v) => (v, true),
                    None => (p.value().map_err(lexerr)?, false),
                };
                (Some(v.into_string().map_err(nonutf8)?), glued)
            }
            None => (None, false),
        };
        let after_operand = !words.is_empty();
        given.push(Given { opt, value, glued, after_operand });
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
        return Ok(Parsed::Help(super::usage(topic)));
    }
    if help {
        return Ok(Parsed::Help(super::usage(command)));
    }
    if version {
        return Ok(Parsed::Version);
    }
    let Some(command) = command else {
        return Err(Error::usage(
            "no command given; try 'rivumi-mcp --help'".to_string(),
        ));
    };
    let mut draft = Draft::default();
    for g in given {
        check_place(command, &g)?;
        let value = g.value.unwrap_or_default();
        apply(&mut draft, g.opt, value)?;
    }
    let global = draft.finish()?;
    let adhoc = global.adhoc.as_ref().map(|a| a.name.clone());
    let cmd = self::command(command, words, &mut draft.own, adhoc)?;
    Ok(Parsed::Run(Box::new(Args { global, command: cmd })))
}

fn lexerr(e: lexopt::Error) -> Error {
    Error::usage(e.to_string())
}

fn nonutf8(v: OsString) -> Error {
    Error::usage(format!("argument {v:?} is not valid UTF-8"))
}

/// An option given to a command it does not apply to is refused; so is
/// one word that is both an option and its value after an operand a
/// server may have chosen (`prompt demo greet "--pre-tool-hook=CMD"`).
fn check_place(command: Cmd, g: &Given) -> Result<()> {
    let long = g.opt.long;
    if !g.opt.applies_to(command) {
        return Err(Error::usage(format!(
            "flag '--{long}' does not apply to '{command}'"
        )));
    }
    // The options that run a program or choose the server never follow
    // an operand a server may have chosen, in either spelling.
    let runs = matches!(
        g.opt.flag,
        Flag::PreToolHook | Flag::SamplingCommand | Flag::Stdio | Flag::Http
    );
    if runs && g.after_operand && command.operands_from_servers() {
        return Err(Error::usage(format!(
            "'--{long}' after an operand of '{command}': an option that runs \
             a program or chooses the server must come before the operands \
             (two words from a server could spell it); put -- before \
             operands that may start with '-'"
        )));
    }
    if g.glued && g.after_operand && command.operands_from_servers() {
        return Err(Error::usage(format!(
            "'--{long}=...' after an operand of '{command}': there an option \
             and its value must be two words (one word may come from a \
             server); put options before the operands, and -- before \
             operands that may start with '-'"
        )));
    }
    Ok(())
}

/// The options of one command line, as they are applied.
#[derive(Default)]
struct Draft {
    global: Global,
    own: Own,
    adhoc_name: Option<String>,
}

/// The options that belong to one command (they end up in its
/// [`Command`] variant).
#[derive(Default)]
struct Own {
    format: Option<Format>,
    show: Show,
    args_json: Option<String>,
    save: Option<PathBuf>,
    task: bool,
    detach: bool,
    check: bool,
    no_browser: bool,
    refresh: bool,
    serve: crate::serve::Options,
    device: bool,
}

/// Applies one option. No catch-all: a new [`Flag`] needs its arm.
fn apply(d: &mut Draft, opt: &Opt, value: String) -> Result<()> {
    let flag = format!("--{}", opt.long);
    let g = &mut d.global;
    match opt.flag {
        Flag::Config => g.config = Some(PathBuf::from(value)),
        Flag::Json => g.json = true,
        Flag::Verbose => g.verbose = g.verbose.saturating_add(1),
        Flag::Quiet => g.quiet = true,
        Flag::Raw => g.raw = true,
        Flag::Strict => g.strict = true,
        Flag::Format => d.own.format = Some(choice(opt, &value)?),
        Flag::Tools => d.own.show.tools = true,
        Flag::Resources => d.own.show.resources = true,
        Flag::Prompts => d.own.show.prompts = true,
        Flag::All => {
            d.own.show = Show { tools: true, resources: true, prompts: true }
        }
        Flag::Check => d.own.check = true,
        Flag::Args => d.own.args_json = Some(value),
        Flag::Save => d.own.save = Some(PathBuf::from(value)),
        Flag::Task => d.own.task = true,
        Flag::Detach => d.own.detach = true,
        Flag::NoBrowser => d.own.no_browser = true,
        Flag::Refresh => {
            d.own.refresh = true;
            g.refresh = true;
        }
        Flag::Device => d.own.device = true,
        Flag::Lock => g.lock = Some(PathBuf::from(value)),
        Flag::Unlocked => g.unlocked = true,
        Flag::Yes => g.yes = true,
        // `--approve execute` is `--yes`; anything else is a pattern of
        // qualified tool names.
        Flag::Approve if Approve::NAMES.contains(&value.as_str()) => {
            g.yes = true
        }
        Flag::Approve => {
            crate::tool::check_approve_pattern(&value)
                .map_err(|e| Error::usage(format!("{flag}: {e}")))?;
            g.approve.push(value);
        }
        Flag::Grep => g.grep = Some(value),
        Flag::Output => g.output = choice(opt, &value)?,
        Flag::ReadOnly => g.read_only = true,
        Flag::PreToolHook => g.hooks.push(value),
        Flag::HookTimeout => g.hook_timeout = Some(secs(&flag, &value)?),
        Flag::MaxOutput => g.max_output = Some(bytes(&flag, &value)?),
        Flag::Journal => g.journal = Some(PathBuf::from(value)),
        Flag::Timeout => g.timeout = Some(secs(&flag, &value)?),
        Flag::StartupTimeout => g.startup_timeout = Some(secs(&flag, &value)?),
        Flag::MaxMessage => g.max_message = Some(bytes(&flag, &value)?),
        Flag::StepUp => g.step_up = true,
        Flag::Protocol => g.protocol = Some(choice(opt, &value)?),
        Flag::Stdio | Flag::Http => {
            if g.adhoc.is_some() {
                return Err(Error::usage(
                    "--stdio and --http name one server; give one of them \
                     once",
                ));
            }
            let target = if opt.flag == Flag::Http {
                AdhocTarget::Http(value)
            } else {
                let argv = crate::words::split_command(&value)
                    .map_err(|e| Error::usage(format!("{flag}: {e}")))?;
                AdhocTarget::Stdio(argv)
            };
            g.adhoc = Some(Adhoc { name: ADHOC_NAME.to_string(), target });
        }
        Flag::Name => {
            crate::config::check_name(&value)
                .map_err(|e| Error::usage(format!("{flag}: {e}")))?;
            d.adhoc_name = Some(value);
        }
        Flag::Elicit => g.client.elicit = Some(choice(opt, &value)?),
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
        Flag::NoSandbox => g.no_sandbox.push(value),
        Flag::NoDaemon => g.no_daemon = true,
        // The daemon's own parser reads these (`daemon` first); here they
        // only come with a usage error for the misplaced `daemon`.
        Flag::Foreground | Flag::Idle => {}
        Flag::LogLevel => g.client.log_level = Some(choice(opt, &value)?),
        Flag::Listen => d.own.serve.listen = Some(value),
        Flag::Servers => d.own.serve.servers.extend(
            value.split(',').filter(|s| !s.is_empty()).map(String::from),
        ),
        Flag::TokenEnv => d.own.serve.token_env = Some(value),
        Flag::AllowOrigin => d.own.serve.origins.push(value),
        Flag::DryRun => d.own.serve.dry_run = true,
    }
    Ok(())
}

impl Draft {
    /// The checks across options, once every option is applied.
    fn finish(&mut self) -> Result<Global> {
        let mut g = std::mem::take(&mut self.global);
        match (&mut g.adhoc, self.adhoc_name.take()) {
            (Some(a), Some(n)) => a.name = n,
            (None, Some(_)) => {
                return Err(Error::usage(
                    "--name names an ad-hoc server: give --stdio or --http \
                     too",
                ));
            }
            _ => {}
        }
        if g.adhoc.is_some() && g.config.is_some() {
            return Err(Error::usage(
                "--stdio/--http replace the config file; drop -c/--config",
            ));
        }
        if g.json {
            if self.own.format.is_some_and(|f| f != Format::Json) {
                return Err(Error::usage("--json conflicts with --format"));
            }
            self.own.format = Some(Format::Json);
        }
        if self.own.show == Show::default() {
            self.own.show.tools = true;
        }
        Ok(g)
    }
}

/// The command, from its operands and its own options.
fn command(
    command: Cmd,
    words: Vec<String>,
    own: &mut Own,
    adhoc: Option<String>,
) -> Result<Command> {
    let mut ops = Operands { command, words: words.into_iter() };
    let format = own.format.unwrap_or(Format::Human);
    let cmd = match command {
        Cmd::CheckConfig => Command::CheckConfig { format },
        Cmd::Lock => {
            Command::Lock { servers: ops.rest(), check: own.check, format }
        }
        Cmd::List => Command::List { servers: ops.rest(), show: own.show },
        Cmd::Call => call(&mut ops, own, adhoc)?,
        Cmd::Task => {
            let sub: crate::task::Sub = ops
                .need("get|wait|result|cancel|list")?
                .parse()
                .map_err(Error::usage)?;
            let server = ops.need("SERVER")?;
            let id = match sub {
                crate::task::Sub::List => None,
                _ => Some(ops.need("TASK_ID")?),
            };
            Command::Task { sub, server, id }
        }
        Cmd::Skills => Command::Skills { servers: ops.rest() },
        Cmd::Skill => {
            let sub = ops.need("get")?;
            if sub != "get" {
                return Err(Error::usage(format!(
                    "unknown skill action '{sub}' (one of: get)"
                )));
            }
            Command::Skill {
                server: ops.need("SERVER")?,
                name: ops.need("NAME")?,
                save: own.save.take(),
            }
        }
        Cmd::Resources => Command::Resources { server: ops.need("SERVER")? },
        Cmd::Read => Command::Read {
            server: ops.need("SERVER")?,
            uri: ops.need("URI")?,
            save: own.save.take(),
        },
        Cmd::Prompts => Command::Prompts { server: ops.need("SERVER")? },
        Cmd::Prompt => {
            let server = ops.need("SERVER")?;
            let name = ops.need("NAME")?;
            let pairs = pairs(ops.rest(), "key=value")?;
            Command::Prompt { server, name, pairs }
        }
        Cmd::Batch => Command::Batch,
        // `main` gives the words after a leading `daemon` to the daemon's
        // own parser; here `daemon` came after an option.
        Cmd::Daemon => {
            return Err(Error::usage(
                "'daemon' comes first, its options after it: rivumi-mcp \
                 daemon start|status|stop (see rivumi-mcp daemon --help)",
            ));
        }
        Cmd::Login => Command::Login {
            server: ops.need("SERVER")?,
            no_browser: own.no_browser,
            refresh: own.refresh,
            device: own.device,
        },
        Cmd::Logout => Command::Logout { server: ops.need("SERVER")? },
        Cmd::Discover => Command::Discover { server: ops.need("SERVER")? },
        Cmd::Status => Command::Status,
        Cmd::Completions => {
            let word = ops.need("SHELL (bash, zsh or fish)")?;
            let shell = Shell::from_str(&word).map_err(|e| {
                Error::usage(format!(
                    "{e} [pick from: {}]",
                    Shell::NAMES.join(", ")
                ))
            })?;
            Command::Completions { shell }
        }
        Cmd::Servers => Command::Servers,
        Cmd::Man => Command::Man,
        Cmd::Serve => Command::Serve(Box::new(std::mem::take(&mut own.serve))),
        Cmd::Help => unreachable!("help is answered before the command"),
    };
    if let Some(extra) = ops.words.next() {
        return Err(Error::usage(format!(
            "unexpected argument '{extra}' for '{command}'"
        )));
    }
    Ok(cmd)
}

/// `call`'s operands: the tool (qualified, or after its server) and
/// its `key=value` arguments.
fn call(
    ops: &mut Operands,
    own: &mut Own,
    adhoc: Option<String>,
) -> Result<Command> {
    // `call --http URL TOOL k=v`: with an ad-hoc server, a first word
    // that is not its name and is followed by no word or by an argument
    // is the tool (a word that is not an argument names the server).
    let words = ops.words.as_slice();
    let adhoc_tool = match (&adhoc, words.first(), words.get(1)) {
        (Some(name), Some(first), next) => {
            first != name
                && !first.starts_with("mcp__")
                && next.is_none_or(|w| w.contains('='))
        }
        _ => false,
    };
    let first = ops.need("TOOL")?;
    let target = if first.starts_with("mcp__") {
        Target::Qualified(first)
    } else if let Some(server) = adhoc.filter(|_| adhoc_tool) {
        Target::Split { server, tool: first }
    } else {
        let tool = ops.need("TOOL (after the server name)")?;
        Target::Split { server: first, tool }
    };
    let pairs = pairs(ops.rest(), "key=value or key:=json")?;
    let (args, save) = (own.args_json.take(), own.save.take());
    let task = match (own.task, own.detach) {
        (_, true) => AsTask::Detach,
        (true, false) => AsTask::Wait,
        (false, false) => AsTask::No,
    };
    Ok(Command::Call { target, pairs, args, save, task })
}

/// A command's operands, taken in order.
struct Operands {
    command: Cmd,
    words: std::vec::IntoIter<String>,
}

impl Operands {
    /// The next operand; `what` names it when it is missing.
    fn need(&mut self, what: &str) -> Result<String> {
        self.words.next().ok_or_else(|| {
            Error::usage(format!(
                "missing argument {what}; try 'rivumi-mcp {} --help'",
                self.command
            ))
        })
    }

    /// The operands left.
    fn rest(&mut self) -> Vec<String> {
        self.words.by_ref().collect()
    }
}

/// `key=value` words: each must hold a `=`.
fn pairs(words: Vec<String>, what: &str) -> Result<Vec<String>> {
    if let Some(bad) = words.iter().find(|p| !p.contains('=')) {
        return Err(Error::usage(format!("argument '{bad}' is not {what}")));
    }
    Ok(words)
}

/// A value from a fixed set, through the type's `FromStr` (whose error
/// says what was wrong); the set offered comes from the option table.
fn choice<T: FromStr<Err = String>>(opt: &Opt, value: &str) -> Result<T> {
    T::from_str(value).map_err(|e| {
        let set = match opt.kind {
            super::ValueKind::Choice(set) => set.join(", "),
            _ => String::new(),
        };
        Error::usage(format!("--{}: {e} [pick from: {set}]", opt.long))
    })
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

#[cfg(test)]
mod tests {
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
        let e = parse_raw("call s t --approve read").unwrap_err().to_string();
        assert!(
            e.starts_with("--approve: 'read' is not a qualified tool"),
            "{e}"
        );
        let a = run("call s t --approve mcp__s__* --approve mcp__x__t");
        assert_eq!(a.global.approve, ["mcp__s__*", "mcp__x__t"]);
        assert!(!a.global.yes);
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
        let e = parse_raw("check-config --format xml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--format: unknown format 'xml' [pick from: human, json, github]"
        );
        let e = parse_raw("list --log-level loud").unwrap_err().to_string();
        assert!(e.starts_with("--log-level: unknown level 'loud'"), "{e}");
        let e = parse_raw("list --protocol x").unwrap_err().to_string();
        assert!(e.contains("[pick from: auto, modern, legacy]"), "{e}");
        let e = parse_raw("list --elicit x").unwrap_err().to_string();
        assert!(e.starts_with("--elicit: unknown mode 'x'"), "{e}");
    }

    #[test]
    fn one_word_is_never_an_option_and_its_value_after_an_operand() {
        for line in [
            "prompt demo greet --pre-tool-hook=x",
            "prompt demo --sampling-command=x greet",
            "read demo --stdio=x fixture://a",
            "call demo echo --http=http://127.0.0.1:1/",
            "call mcp__demo__echo --journal=j",
            "call demo echo -cother.json",
        ] {
            let e = parse_raw(line).unwrap_err().to_string();
            assert!(e.contains("after an operand"), "{line}: {e}");
        }
        // Two words, before the operands, or where no server chooses
        // operands.
        let a = run("call --pre-tool-hook=x demo echo t=1 --yes --json");
        assert_eq!(a.global.hooks, ["x"]);
        let a = run("call demo echo t=1 --timeout 5 --json");
        assert!(a.global.json);
        // The options that run a program: never after an operand.
        for line in [
            "call demo echo t=1 --pre-tool-hook x",
            "prompt demo greet --sampling-command x",
            "read demo fixture://a --stdio x",
            "call mcp__demo__echo --http http://127.0.0.1:1/",
        ] {
            let e = parse_raw(line).unwrap_err().to_string();
            assert!(
                e.contains("must come before the operands"),
                "{line}: {e}"
            );
        }
        run("prompt --sampling-command=x demo greet");
        run("resources demo --stdio=x");
        run("list demo --sampling-command=x");
        // After --, an option's spelling is an operand.
        let a = run("prompt demo greet -- --pre-tool-hook=x");
        assert!(a.global.hooks.is_empty());
        assert!(matches!(a.command, Command::Prompt { ref pairs, .. }
            if pairs == &["--pre-tool-hook=x"]));
    }
}
