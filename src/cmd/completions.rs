//! `rivumi-mcp completions SHELL` and the hidden `rivumi-mcp __servers`.
//!
//! The scripts are generated from the parser's own tables ([`Cmd`] and
//! [`cli::options`], with their descriptions), so a new command or option completes without a
//! second list to keep in step. What a command's words are (server names,
//! a command name, a shell) is [`Cmd::operands`] in the command table,
//! whose match has no catch-all: a new command must say.
//!
//! Server names come from `__servers`, which reads the config in effect
//! (`-c` honoured) and prints the valid names, one a line. It starts no
//! server, contacts no URL, reads no credential and expands no variable:
//! the shell runs it on every TAB. Tool names are not completed: only a
//! running server knows them, and a cache of what servers once said would
//! put server-chosen words on the user's command line.

use std::fmt::Write as _;
use std::path::Path;

use crate::cli::{self, Cmd, Operand, Shell, ValueKind};
use crate::config;
use crate::error::Result;
use crate::out;

impl Operand {
    /// The word the scripts use for it, or `None` for nothing.
    fn word(self) -> Option<&'static str> {
        match self {
            Operand::Nothing => None,
            Operand::Servers | Operand::Server => Some("servers"),
            Operand::Command => Some("commands"),
            Operand::Shell => Some("shells"),
        }
    }

    /// Whether only the first operand takes it (`list a b` completes
    /// server names at every one).
    fn only_first(self) -> bool {
        !matches!(self, Operand::Servers)
    }
}

/// The commands completion offers.
fn shown() -> impl Iterator<Item = Cmd> {
    Cmd::ALL.into_iter().filter(|c| !c.hidden())
}

/// The option words offered after `c`, or before any command: every
/// spelling of each option that applies (before a command: those every
/// command takes), then help (and version before a command).
fn option_words(c: Option<Cmd>) -> Vec<String> {
    let mut words = vec![];
    for o in cli::options() {
        if c.map_or(o.global(), |c| o.applies_to(c)) {
            words.extend(o.short().map(|s| format!("-{s}")));
            words.push(format!("--{}", o.long()));
        }
    }
    words.extend(["-h", "--help"].map(String::from));
    if c.is_none() {
        words.extend(["-V", "--version"].map(String::from));
    }
    words
}

/// Every spelling of an option `kind` says is in a set, with the kind.
fn valued() -> Vec<(Vec<String>, ValueKind)> {
    cli::options()
        .iter()
        .filter(|o| o.takes_value())
        .map(|o| {
            let mut names: Vec<String> =
                o.short().map(|s| format!("-{s}")).into_iter().collect();
            names.push(format!("--{}", o.long()));
            (names, o.kind())
        })
        .collect()
}

fn command_names() -> String {
    shown().map(Cmd::name).collect::<Vec<_>>().join(" ")
}

fn shell_names() -> String {
    Shell::ALL.map(Shell::name).join(" ")
}

/// The completion script for `shell`.
pub(crate) fn script(shell: Shell) -> String {
    match shell {
        Shell::Bash => bash(),
        Shell::Zsh => zsh(),
        Shell::Fish => fish(),
    }
}

/// Prints the server names of the config at `path`, one a line: only
/// names valid as server names (so no shell ever sees a metacharacter from
/// the file). Variables are not expanded: no environment is consulted.
pub(crate) fn servers(path: &Path) -> Result<()> {
    let config = config::load(path, false, &|_| None)?;
    let mut text = String::new();
    for name in config.names() {
        if config::check_name(name).is_ok() {
            text.push_str(name);
            text.push('\n');
        }
    }
    out::print(&text)
}

/// `case` arms (bash and zsh share the syntax) mapping a command to `body`
/// with `{}` replaced by a per-command value.
fn case_arms(indent: &str, value: impl Fn(Cmd) -> Option<String>) -> String {
    let mut arms = String::new();
    for c in shown() {
        if let Some(v) = value(c) {
            let _ = writeln!(arms, "{indent}{}) {v} ;;", c.name());
        }
    }
    arms
}

/// The `case $cmd` arms choosing what the operands complete to.
fn want_arms(indent: &str, npos: &str) -> String {
    case_arms(indent, |c| {
        let op = c.operands();
        op.word().map(|w| {
            if op.only_first() {
                format!("(( {npos} == 0 )) && want={w}")
            } else {
                format!("want={w}")
            }
        })
    })
}

/// The `case $prev` arms for option values: `files`, `dirs`, the words
/// of a fixed set, or nothing.
fn value_arms(
    indent: &str,
    kind_line: impl Fn(ValueKind) -> String,
) -> String {
    let mut arms = String::new();
    for (names, kind) in valued() {
        let _ = writeln!(
            arms,
            "{indent}{}) {} ;;",
            names.join("|"),
            kind_line(kind)
        );
    }
    arms
}

/// The valued option spellings, `|`-separated with `|` at both ends.
fn valued_pattern() -> String {
    let names: Vec<String> =
        valued().into_iter().flat_map(|(n, _)| n).collect();
    format!("|{}|", names.join("|"))
}

const BASH: &str = r#"# bash completion for rivumi-mcp; generated by `rivumi-mcp completions bash`.
# Server names come from `rivumi-mcp __servers` (the config in effect, -c
# honoured), which starts no server and reads no credential.

_rivumi_mcp_servers() {
    if [[ -n $1 ]]; then
        command rivumi-mcp __servers -c "${1/#\~/$HOME}" 2>/dev/null
    else
        command rivumi-mcp __servers 2>/dev/null
    fi
}

_rivumi_mcp() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=
    (( COMP_CWORD > 0 )) && prev=${COMP_WORDS[COMP_CWORD-1]}
    # bash splits --opt=value at the '=' (COMP_WORDBREAKS).
    if [[ $cur == = ]]; then
        cur=
    elif [[ $prev == = ]] && (( COMP_CWORD > 1 )); then
        prev=${COMP_WORDS[COMP_CWORD-2]}
    fi
    local valued='@VALUED@'
    local cmd= cfg= npos=0 i w
    for (( i = 1; i < COMP_CWORD; i++ )); do
        w=${COMP_WORDS[i]}
        if [[ $valued == *"|$w|"* ]]; then
            (( i++ ))
            [[ ${COMP_WORDS[i]} == = ]] && (( i++ ))
            [[ $w == -c || $w == --config ]] && cfg=${COMP_WORDS[i]}
            continue
        fi
        case $w in
            --config=*) cfg=${w#--config=} ;;
            -c?*) cfg=${w#-c} ;;
            -*) ;;
            *) if [[ -z $cmd ]]; then cmd=$w; else (( npos++ )); fi ;;
        esac
    done
    COMPREPLY=()
    local words= want=
    case $prev in
@VALUES@    esac
    if [[ -z $want && -z $words ]]; then
        if [[ $cur == -* ]]; then
            case $cmd in
                '') words='@GLOBAL@' ;;
@OPTIONS@                *) words='--help' ;;
            esac
        elif [[ -z $cmd ]]; then
            want=commands
        else
            case $cmd in
@WANT@            esac
        fi
    fi
    case $want in
        none) return ;;
        files) compopt -o filenames 2>/dev/null
               mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
        dirs) compopt -o filenames 2>/dev/null
              mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return ;;
        commands) words='@COMMANDS@' ;;
        shells) words='@SHELLS@' ;;
        servers)
            words=$(_rivumi_mcp_servers "$cfg")
            if [[ $cmd == call && $cur == mcp__* ]]; then
                compopt -o nospace 2>/dev/null
                mapfile -t COMPREPLY < <(compgen -P mcp__ -S __ -W "$words" -- "${cur#mcp__}")
                return
            fi ;;
    esac
    [[ -n $words ]] && mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
    return 0
}

complete -F _rivumi_mcp rivumi-mcp
"#;

fn bash() -> String {
    fill(BASH, |words| format!("words='{words}'"))
}

/// A bash or zsh template with its tables filled in: `offer` turns a
/// space-separated list of candidates into the shell's way to offer them.
fn fill(template: &str, offer: impl Fn(&str) -> String) -> String {
    let values = value_arms("        ", |k| match k {
        ValueKind::Choice(set) => offer(&set.join(" ")),
        ValueKind::File => "want=files".into(),
        ValueKind::Dir => "want=dirs".into(),
        ValueKind::Free | ValueKind::None => "want=none".into(),
    });
    let options = case_arms("                ", |c| {
        Some(offer(&option_words(Some(c)).join(" ")))
    });
    template
        .replace("@VALUED@", &valued_pattern())
        .replace("@VALUES@", &values)
        .replace("@GLOBAL@", &option_words(None).join(" "))
        .replace("@OPTIONS@", &options)
        .replace("@WANT@", &want_arms("                ", "npos"))
        .replace("@COMMANDS@", &command_names())
        .replace("@SHELLS@", &shell_names())
}

const ZSH: &str = r#"#compdef rivumi-mcp
# zsh completion for rivumi-mcp; generated by `rivumi-mcp completions zsh`.
# Server names come from `rivumi-mcp __servers` (the config in effect, -c
# honoured), which starts no server and reads no credential.

# Sets REPLY to what the word at CURRENT completes to (words, nospace,
# files, dirs or none) and reply to the words.
_rivumi_mcp_candidates() {
    local cur=${words[CURRENT]} prev=${words[CURRENT-1]}
    local valued='@VALUED@'
    local cmd= cfg= want= w
    integer npos=0 i
    REPLY=words
    reply=()
    for (( i = 2; i < CURRENT; i++ )); do
        w=${words[i]}
        if [[ $valued == *"|$w|"* ]]; then
            (( i++ ))
            [[ $w == -c || $w == --config ]] && cfg=${words[i]}
            continue
        fi
        case $w in
            --config=*) cfg=${w#--config=} ;;
            -c?*) cfg=${w#-c} ;;
            -*) ;;
            *) if [[ -z $cmd ]]; then cmd=$w; else (( npos++ )); fi ;;
        esac
    done
    case $prev in
@VALUES@    esac
    if [[ -z $want && ${#reply} -eq 0 ]]; then
        if [[ $cur == -* ]]; then
            case $cmd in
                '') reply=(@GLOBAL@) ;;
@OPTIONS@                *) reply=(--help) ;;
            esac
        elif [[ -z $cmd ]]; then
            want=commands
        else
            case $cmd in
@WANT@            esac
        fi
    fi
    case $want in
        none|files|dirs) REPLY=$want ;;
        commands) reply=(@COMMANDS@) ;;
        shells) reply=(@SHELLS@) ;;
        servers)
            if [[ -n $cfg ]]; then
                reply=(${(f)"$(command rivumi-mcp __servers -c "${~cfg}" 2>/dev/null)"})
            else
                reply=(${(f)"$(command rivumi-mcp __servers 2>/dev/null)"})
            fi
            if [[ $cmd == call && $cur == mcp__* ]]; then
                reply=(mcp__${^reply}__)
                REPLY=nospace
            fi ;;
    esac
}

_rivumi_mcp() {
    local REPLY
    local -a reply
    _rivumi_mcp_candidates
    case $REPLY in
        files) _files ;;
        dirs) _directories ;;
        nospace) compadd -S '' -a reply ;;
        words) compadd -a reply ;;
    esac
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _rivumi_mcp "$@"
else
    compdef _rivumi_mcp rivumi-mcp
fi
"#;

fn zsh() -> String {
    fill(ZSH, |words| format!("reply=({words})"))
}

const FISH: &str = r#"# fish completion for rivumi-mcp; generated by `rivumi-mcp completions fish`.
# Server names come from `rivumi-mcp __servers` (the config in effect, -c
# honoured), which starts no server and reads no credential.

# Prints the command (cmd), the config (cfg) or the number of operands
# after the command (npos) of the line being completed.
function __rivumi_mcp_state
    set -l words (commandline -opc)
    set -e words[1]
    set -l cmd ''
    set -l cfg ''
    set -l npos 0
    set -l skip ''
    for w in $words
        if test -n "$skip"
            test "$skip" = config; and set cfg $w
            set skip ''
            continue
        end
        switch $w
            case -c --config
                set skip config
            case @VALUED@
                set skip value
            case '--config=*'
                set cfg (string replace -- --config= '' $w)
            case '-c?*'
                set cfg (string sub -s 3 -- $w)
            case '-*'
            case '*'
                if test -z "$cmd"
                    set cmd $w
                else
                    set npos (math $npos + 1)
                end
        end
    end
    switch $argv[1]
        case cmd
            echo $cmd
        case cfg
            echo $cfg
        case npos
            echo $npos
    end
end

function __rivumi_mcp_no_cmd
    test -z (__rivumi_mcp_state cmd)
end

function __rivumi_mcp_using
    contains -- (__rivumi_mcp_state cmd) $argv
end

# Whether the word being completed is an operand that takes $argv[1].
function __rivumi_mcp_wants
    set -l cmd (__rivumi_mcp_state cmd)
    set -l npos (__rivumi_mcp_state npos)
    set -l want ''
    switch $cmd
@WANT@    end
    test "$want" = "$argv[1]"
end

function __rivumi_mcp_servers
    set -l cfg (__rivumi_mcp_state cfg)
    if test -n "$cfg"
        command rivumi-mcp __servers -c (string replace -r '^~' -- $HOME $cfg) 2>/dev/null
    else
        command rivumi-mcp __servers 2>/dev/null
    end
end

complete -c rivumi-mcp -f
"#;

/// A word in single quotes for fish.
fn fish_quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn fish() -> String {
    let mut want = String::new();
    for c in shown() {
        let op = c.operands();
        if let Some(w) = op.word() {
            let cond =
                if op.only_first() { "test $npos = 0; and " } else { "" };
            let _ = writeln!(
                want,
                "        case {}\n            {cond}set want {w}",
                c.name()
            );
        }
    }
    let valued: Vec<String> = valued()
        .into_iter()
        .flat_map(|(n, _)| n)
        .filter(|n| n != "-c" && n != "--config")
        .collect();
    let mut s =
        FISH.replace("@VALUED@", &valued.join(" ")).replace("@WANT@", &want);
    let c = "complete -c rivumi-mcp";
    for cmd in shown() {
        let _ = writeln!(
            s,
            "{c} -n __rivumi_mcp_no_cmd -a {} -d {}",
            cmd.name(),
            fish_quote(cmd.summary())
        );
    }
    let _ = writeln!(
        s,
        "{c} -n '__rivumi_mcp_wants commands' -a {}",
        fish_quote(&command_names())
    );
    let _ = writeln!(
        s,
        "{c} -n '__rivumi_mcp_wants shells' -a {}",
        fish_quote(&shell_names())
    );
    let _ = writeln!(
        s,
        "{c} -n '__rivumi_mcp_wants servers' -a '(__rivumi_mcp_servers)'"
    );
    let _ = writeln!(s, "{c} -s h -l help -d 'Show help'");
    let _ = writeln!(
        s,
        "{c} -n __rivumi_mcp_no_cmd -s V -l version -d 'Show the version'"
    );
    for o in cli::options() {
        let mut line = c.to_string();
        if !o.global() {
            let cmds: Vec<&str> =
                shown().filter(|c| o.applies_to(*c)).map(Cmd::name).collect();
            let _ = write!(
                line,
                " -n {}",
                fish_quote(&format!("__rivumi_mcp_using {}", cmds.join(" ")))
            );
        }
        if let Some(short) = o.short() {
            let _ = write!(line, " -s {short}");
        }
        let _ = write!(line, " -l {}", o.long());
        match o.kind() {
            ValueKind::None => {}
            ValueKind::Free => line.push_str(" -x"),
            ValueKind::File => line.push_str(" -r -F"),
            ValueKind::Dir => line.push_str(
                " -x -a '(__fish_complete_directories (commandline -ct))'",
            ),
            ValueKind::Choice(set) => {
                let _ = write!(line, " -x -a {}", fish_quote(&set.join(" ")));
            }
        }
        let _ = write!(line, " -d {}", fish_quote(o.help()));
        s.push_str(&line);
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_is_offered_where_it_applies() {
        for o in cli::options() {
            for c in shown() {
                let words = option_words(Some(c));
                let offered = words.contains(&format!("--{}", o.long()));
                assert_eq!(
                    offered,
                    o.applies_to(c),
                    "--{} after {c}",
                    o.long()
                );
            }
        }
        assert!(option_words(None).contains(&"--config".to_string()));
        assert!(!option_words(None).contains(&"--strict".to_string()));
    }

    #[test]
    fn hidden_commands_are_not_offered() {
        let names = command_names();
        assert!(
            names.contains("check-config") && names.contains("completions")
        );
        assert!(!names.contains("__"), "{names}");
    }

    const PLACEHOLDERS: [&str; 7] = [
        "@VALUED@",
        "@VALUES@",
        "@GLOBAL@",
        "@OPTIONS@",
        "@WANT@",
        "@COMMANDS@",
        "@SHELLS@",
    ];

    #[test]
    fn fixed_values_are_in_every_script() {
        for shell in Shell::ALL {
            let s = script(shell);
            assert!(s.contains("human json github"), "{}", shell.name());
            assert!(s.contains("--format"), "{}", shell.name());
            for p in PLACEHOLDERS {
                assert!(!s.contains(p), "{}: {p} left", shell.name());
            }
        }
    }

    #[test]
    fn fish_quotes() {
        assert_eq!(fish_quote(r"it's a\b"), r"'it\'s a\\b'");
    }
}
