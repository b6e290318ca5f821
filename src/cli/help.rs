//! Every help text, generated from the command table ([`super::cmds`])
//! and the option table ([`super::opts`]); the man page reads the same
//! pieces ([`option_groups`], [`exit_rows`], [`HELP_FLAGS`]).

use super::cmds::Cmd;
use super::opts::{Group, Opt, options};
use crate::error::Kind;

/// `-h`/`--help` and `-V`/`--version`, which the parser answers before
/// the option table: their help column and description.
pub(crate) const HELP_FLAGS: [(&str, &str); 2] = [
    ("-h, --help", "Show help (of a command: rivumi-mcp list --help)"),
    ("-V, --version", "Show the version"),
];

/// Where help descriptions start, and how wide help lines may be.
const DESC_COLUMN: usize = 30;
const WIDTH: usize = 79;
/// Where the meaning of an exit code starts.
const EXIT_COLUMN: usize = 16;

const TOP_HEAD: &str = "\
rivumi-mcp: a command-line client for the Model Context Protocol

USAGE:
    rivumi-mcp [OPTIONS] <COMMAND> [ARGS...]

COMMANDS:
";

/// What the top-level help says after its options.
pub(crate) const TOP_TAIL: &str = "\
Other options apply to some commands: rivumi-mcp COMMAND --help lists
them. Options may stand before or after the command; after the first
operand of call, read and prompt, --opt=VALUE is refused (an option and
its value are two words there), and --pre-tool-hook, --sampling-command,
--stdio and --http are refused (they go before the operands). -- ends
the options: every word after it is an operand.

Servers start only when named in RIVUMI_MCP_ALLOWLIST (comma-separated).
Exit codes: 0 ok, 1 negative result, 2 usage, 3 refused, 4 server error,
5 timeout, 6 authentication required, 7 denied, 8 output truncated by
--max-output, 130/143 interrupted.
";

/// The meaning of exit 2 and of 130/143, which every command has.
const USAGE_EXIT: &str =
    "usage: a bad command line or an unreadable input file";
const SIGNAL_EXIT: &str =
    "interrupted (SIGINT, SIGTERM), after closing every server";

/// The help text of a command, or the top-level one.
pub(crate) fn usage(command: Option<Cmd>) -> String {
    match command {
        Some(c) if c != Cmd::Help => command_usage(c),
        _ => top_usage(),
    }
}

/// The top-level help: the commands, then the global options.
fn top_usage() -> String {
    let mut t = TOP_HEAD.to_string();
    for c in Cmd::ALL.into_iter().filter(|c| !c.hidden()) {
        t.push_str(&format!("    {:<14} {}\n", c.name(), c.summary()));
    }
    t.push_str("\nOPTIONS (any command, before or after it):\n");
    for o in options().iter().filter(|o| o.global()) {
        row(&mut t, &o.spec(), o.help());
    }
    for (spec, help) in HELP_FLAGS {
        row(&mut t, spec, help);
    }
    t.push('\n');
    t.push_str(TOP_TAIL);
    t
}

/// The first line of a command's help: the summary, lower-cased.
pub(crate) fn title(c: Cmd) -> String {
    let s = c.summary();
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn command_usage(c: Cmd) -> String {
    let doc = c.doc();
    let mut t = format!("rivumi-mcp {}: {}\n\nUSAGE:\n", c.name(), title(c));
    for u in doc.usage {
        t.push_str(&format!("    rivumi-mcp {u}\n"));
    }
    if !doc.about.is_empty() {
        t.push('\n');
        for line in doc.about.lines() {
            t.push_str(line);
            t.push('\n');
        }
    }
    for (group, opts) in option_groups(c) {
        t.push_str(&format!("\n{}:\n", group.heading()));
        for o in opts {
            row(&mut t, &o.spec(), o.help());
        }
        if group == Group::Global {
            for (spec, help) in HELP_FLAGS.iter().take(1) {
                row(&mut t, spec, help);
            }
        }
    }
    t.push_str("\nEXIT CODES:\n");
    for (code, text) in exit_rows(c) {
        row_at(&mut t, &code, &text, EXIT_COLUMN);
    }
    if !doc.examples.is_empty() {
        t.push_str("\nEXAMPLES:\n");
        for e in doc.examples {
            t.push_str(&format!("    {e}\n"));
        }
    }
    t
}

/// The options of `c` by heading, in table order; empty groups left out.
pub(crate) fn option_groups(c: Cmd) -> Vec<(Group, Vec<&'static Opt>)> {
    Group::ALL
        .into_iter()
        .map(|g| {
            let opts: Vec<&Opt> = options()
                .iter()
                .filter(|o| o.group == g && o.applies_to(c))
                .collect();
            (g, opts)
        })
        .filter(|(_, opts)| !opts.is_empty())
        .collect()
}

/// A command's exit codes, in order: 0, its own, 2, 130/143.
pub(crate) fn exit_rows(c: Cmd) -> Vec<(String, String)> {
    let doc = c.doc();
    let mut rows: Vec<(u8, String)> = vec![(0, doc.ok.to_string())];
    rows.push((Kind::Usage.exit_code(), USAGE_EXIT.to_string()));
    for (kind, text) in doc.exits.iter().flat_map(|l| l.iter()) {
        rows.push((kind.exit_code(), text.to_string()));
    }
    rows.sort_by_key(|(code, _)| *code);
    let mut out: Vec<(String, String)> =
        rows.into_iter().map(|(c, t)| (c.to_string(), t)).collect();
    let (int, term) =
        (Kind::Signal(2).exit_code(), Kind::Signal(15).exit_code());
    out.push((format!("{int}, {term}"), SIGNAL_EXIT.to_string()));
    out
}

/// One help row: the spec, then the description from [`DESC_COLUMN`],
/// wrapped at [`WIDTH`] (on its own line when the spec is too long).
fn row(t: &mut String, spec: &str, desc: &str) {
    row_at(t, spec, desc, DESC_COLUMN);
}

/// [`row`] with the description from `column`.
fn row_at(t: &mut String, spec: &str, desc: &str, column: usize) {
    let lead = format!("    {spec}");
    let lines = wrap(desc, WIDTH - column);
    let mut first = true;
    for line in lines {
        if first && lead.len() + 2 <= column {
            t.push_str(&format!("{lead:<column$}{line}\n"));
        } else {
            if first {
                t.push_str(&lead);
                t.push('\n');
            }
            t.push_str(&format!("{:column$}{line}\n", ""));
        }
        first = false;
    }
}

/// Words of `text` in lines of at most `width` characters (a longer word
/// stands alone).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![];
    let mut cur = String::new();
    for word in text.split_whitespace() {
        if !cur.is_empty()
            && cur.chars().count() + 1 + word.chars().count() > width
        {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_help_lists_its_options_and_exit_codes() {
        for c in Cmd::ALL.into_iter().filter(|c| *c != Cmd::Help) {
            let text = usage(Some(c));
            assert!(text.starts_with(&format!("rivumi-mcp {c}: ")), "{text}");
            for o in options().iter().filter(|o| o.applies_to(c)) {
                assert!(text.contains(&o.spec()), "{c}: --{}", o.long);
            }
            let exits =
                text.split("\nEXIT CODES:\n").nth(1).expect("exit codes");
            for (code, _) in exit_rows(c) {
                assert!(
                    exits.lines().any(|l| l.trim_start().starts_with(&code)),
                    "{c}: exit {code}"
                );
            }
            for line in text.lines() {
                assert!(line.chars().count() <= 100, "{c}: {line}");
            }
        }
    }

    #[test]
    fn call_lists_every_code_it_can_end_with() {
        let codes: Vec<String> =
            exit_rows(Cmd::Call).into_iter().map(|(c, _)| c).collect();
        assert_eq!(
            codes,
            ["0", "1", "2", "3", "4", "5", "6", "7", "8", "130, 143"]
        );
    }

    #[test]
    fn rows_wrap_at_the_description_column() {
        let mut t = String::new();
        row(&mut t, "    --x", &"word ".repeat(30));
        for line in t.lines() {
            assert!(line.len() <= WIDTH, "{line}");
            assert_eq!(&line[..4], "    ");
        }
        assert!(
            t.lines().skip(1).all(|l| l.starts_with(&" ".repeat(DESC_COLUMN)))
        );
    }
}
