//! `rivumi-mcp __man`: the man page, `rivumi-mcp.1`, generated from the
//! help texts the binary prints.
//!
//! One source: every command's section is its `--help` text turned into
//! roff, the OPTIONS section lists every option of the parser's table with
//! the words the help texts describe it in, and EXAMPLES gathers the help
//! texts' examples. Only what no help text says (configuration, the
//! environment, files, the meaning of each exit code) is written here, and
//! the exit code numbers come from [`Kind::exit_code`]. `make man` writes
//! the page; a test fails when the checked-in one differs.
//!
//! The help-text reader ([`describe`]) is shared with the completion
//! scripts, which show the same descriptions.

use std::fmt::Write as _;

use crate::cli::{self, Cmd};
use crate::error::Kind;

/// One option as a help text describes it: `-c, --config PATH   Config…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OptLine {
    /// The left column, `-c, --config PATH`.
    pub(crate) spec: String,
    /// The right column, continuation lines joined.
    pub(crate) desc: String,
}

/// A help text's option lines: indented, starting with `-`, the
/// description after a run of two spaces; deeper-indented lines below one
/// continue its description.
fn option_lines(text: &str) -> Vec<OptLine> {
    let mut found: Vec<OptLine> = vec![];
    let mut in_option = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if indent >= 4 && trimmed.starts_with('-') {
            let (spec, desc) =
                trimmed.split_once("  ").unwrap_or((trimmed, ""));
            found.push(OptLine {
                spec: spec.trim().to_string(),
                desc: desc.trim().to_string(),
            });
            in_option = true;
        } else if in_option && indent >= 12 && !trimmed.is_empty() {
            let last = found.last_mut().expect("in_option follows a push");
            last.desc.push(' ');
            last.desc.push_str(trimmed);
        } else {
            in_option = false;
        }
    }
    found
}

/// The words of an option spec, commas dropped: `["-c", "--config",
/// "PATH"]`.
fn spec_words(spec: &str) -> Vec<&str> {
    spec.split_whitespace().map(|w| w.trim_end_matches(',')).collect()
}

/// Every help text: the top-level one, then each shown command's.
fn help_texts() -> Vec<String> {
    let shown =
        Cmd::ALL.into_iter().filter(|c| !c.hidden() && *c != Cmd::Help);
    std::iter::once(cli::usage(None))
        .chain(shown.map(|c| cli::usage(Some(c))))
        .collect()
}

/// How the help texts describe `--long`: the first option line naming it,
/// the top-level help first, then the commands in help order.
pub(crate) fn describe(long: &str) -> Option<OptLine> {
    let name = format!("--{long}");
    help_texts()
        .iter()
        .flat_map(|t| option_lines(t))
        .find(|l| spec_words(&l.spec).contains(&name.as_str()))
}

/// The value placeholder a help text gives `--long` (`PATH`, `SECS`), or
/// `None` for a flag.
fn metavar(line: &OptLine, long: &str) -> Option<String> {
    let words = spec_words(&line.spec);
    let at = words.iter().position(|w| *w == format!("--{long}"))?;
    words.get(at + 1).filter(|w| !w.starts_with('-')).map(|w| w.to_string())
}

/// Text made safe for roff: backslashes, hyphens (so options copy as
/// ASCII), quotes at a line start, and anything outside ASCII as a named
/// Unicode escape (so `groff` needs no input encoding).
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\e"),
            '-' => out.push_str("\\-"),
            c if c.is_ascii() => out.push(c),
            c => {
                let _ = write!(out, "\\[u{:04X}]", c as u32);
            }
        }
    }
    if out.starts_with(['.', '\'']) {
        out.insert_str(0, "\\&");
    }
    out
}

/// An option spec in bold, its placeholders in italics.
fn spec_roff(spec: &str) -> String {
    spec.split(' ')
        .map(|w| {
            if w.starts_with('-') {
                let (word, comma) = match w.strip_suffix(',') {
                    Some(word) => (word, ","),
                    None => (w, ""),
                };
                format!("\\fB{}\\fR{comma}", esc(word))
            } else if w.is_empty() {
                String::new()
            } else {
                format!("\\fI{}\\fR", esc(w))
            }
        })
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A help text, after its first line, as roff: headings in bold, option
/// lines as tagged paragraphs, indented lines verbatim, prose filled.
fn body_roff(text: &str) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = text.lines().skip(1).collect();
    let options = option_lines(text);
    let mut next_option = options.iter();
    let mut i = 0;
    let mut paragraph = true;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if trimmed.is_empty() {
            paragraph = true;
            i += 1;
        } else if indent == 0 && trimmed.ends_with(':') && trimmed.len() > 1 {
            let _ = writeln!(
                out,
                ".SS \"{}\"",
                esc(trimmed.trim_end_matches(':'))
            );
            paragraph = false;
            i += 1;
        } else if indent >= 4 && trimmed.starts_with('-') {
            let o = next_option.next().expect("option_lines saw it too");
            let _ =
                writeln!(out, ".TP\n{}\n{}", spec_roff(&o.spec), esc(&o.desc));
            i += 1;
            // Skip the continuation lines option_lines already joined.
            while i < lines.len() && {
                let l = lines[i];
                let t = l.trim_start();
                !t.is_empty() && l.len() - t.len() >= 12
            } {
                i += 1;
            }
            paragraph = true;
        } else if indent >= 4 {
            out.push_str(".PP\n.RS 4\n.nf\n");
            while i < lines.len() && lines[i].starts_with("    ") {
                let _ = writeln!(out, "{}", esc(&lines[i][4..]));
                i += 1;
            }
            out.push_str(".fi\n.RE\n");
            paragraph = true;
        } else {
            if paragraph {
                out.push_str(".PP\n");
                paragraph = false;
            }
            let _ = writeln!(out, "{}", esc(trimmed));
            i += 1;
        }
    }
    out
}

/// The lines of a help text's EXAMPLES section.
fn examples(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| *l != "EXAMPLES:")
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .map(|l| &l[4..])
        .collect()
}

/// What each exit code means (the numbers from [`Kind::exit_code`]).
const EXIT_STATUS: &[(Kind, &str)] = &[
    (
        Kind::Negative,
        "A negative result: check-config found errors, a tool returned isError.",
    ),
    (
        Kind::Usage,
        "Usage: unknown command or flag, bad value, missing argument, unknown tool, \
         unreadable config file.",
    ),
    (
        Kind::Refused,
        "Refused: not in the allowlist, pin mismatch, invalid entry, unset variable, \
         malformed allowlist.",
    ),
    (
        Kind::Server,
        "Server error: could not start or connect, died, broke the protocol, answered \
         with an error.",
    ),
    (Kind::Timeout, "Timeout: a named deadline fired."),
    (
        Kind::Auth,
        "Authentication required (HTTP 401, or 403 insufficient_scope).",
    ),
    (Kind::Denied, "Denied by a pre-tool hook or the approval step."),
];

const DESCRIPTION: &str = "\
rivumi-mcp starts or connects to the MCP servers of a .mcp.json file, lists \
what they offer, calls their tools, reads their resources and gets their \
prompts. A server starts only when its name is in RIVUMI_MCP_ALLOWLIST: \
the configuration file is not launch authority. Every call passes an \
executor that classifies it (read or execute), runs pre-tool hooks, asks \
for approval of execute calls, bounds the output and sanitises it on a \
terminal.

Any option may stand before or after the command; an option that does not \
apply to the command is a usage error.";

const CONFIGURATION: &str = "\
The configuration is Claude Code's .mcp.json format, read from the current \
directory only (never a parent) or from the file given with --config:

    {\"mcpServers\": {
      \"demo\": {\"command\": \"node\", \"args\": [\"server.js\"]},
      \"remote\": {\"type\": \"http\", \"url\": \"https://example.com/mcp\"}
    }}

A stdio server has command, args, env and cwd; an HTTP server has url, \
headers and an optional oauth block. ${VAR} and ${VAR:-default} expand \
from the invoking environment. check-config validates the file and shows \
each server's fingerprint.";

const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "RIVUMI_MCP_ALLOWLIST",
        "Comma-separated names of the servers that may start or be contacted. \
         Unset or empty: nothing starts. There are no wildcards.",
    ),
    (
        "RIVUMI_MCP_PRE_TOOL_HOOK",
        "A pre-tool hook command, run after those given with --pre-tool-hook.",
    ),
    (
        "RIVUMI_MCP_APPROVE",
        "Standing approvals for call and batch: qualified tool name patterns \
         (mcp__SERVER__TOOL, * and ? as wildcards), separated by commas or \
         spaces, added to those given with --approve.",
    ),
    (
        "RIVUMI_MCP_JOURNAL",
        "Append journal events to this file (as --journal).",
    ),
    ("RIVUMI_MCP_CREDENTIALS", "The credential file (see FILES)."),
    (
        "RIVUMI_MCP_BROWSER",
        "The program login opens the authorization URL with (else xdg-open, \
         open on macOS); run without a shell.",
    ),
    ("XDG_CONFIG_HOME, HOME", "Where the credential file lives by default."),
];

const FILES: &[(&str, &str)] = &[
    ("./.mcp.json", "The configuration, unless --config names another file."),
    (
        "$XDG_CONFIG_HOME/rivumi-mcp/credentials.json",
        "OAuth credentials stored by login (else ~/.config/rivumi-mcp/credentials.json, \
         or RIVUMI_MCP_CREDENTIALS). Mode 0600 in a 0700 directory; a looser mode is \
         refused, never fixed.",
    ),
    (
        "the journal",
        "JSON Lines appended with --journal PATH or RIVUMI_MCP_JOURNAL: one event per \
         line, never a token, header value or environment value. Created 0600, never \
         through a symbolic link.",
    ),
];

/// A section of prose paragraphs; lines indented by four spaces are
/// shown verbatim.
fn prose_roff(text: &str) -> String {
    let mut out = String::new();
    let mut verbatim = false;
    for line in text.lines() {
        let is_verbatim = line.starts_with("    ");
        if verbatim && !is_verbatim {
            out.push_str(".fi\n.RE\n");
        }
        if line.is_empty() {
            out.push_str(".PP\n");
        } else if is_verbatim {
            if !verbatim {
                out.push_str(".PP\n.RS 4\n.nf\n");
            }
            let _ = writeln!(out, "{}", esc(&line[4..]));
        } else {
            let _ = writeln!(out, "{}", esc(line));
        }
        verbatim = is_verbatim;
    }
    if verbatim {
        out.push_str(".fi\n.RE\n");
    }
    out
}

fn tagged(out: &mut String, tag: &str, text: &str) {
    let _ = writeln!(out, ".TP\n\\fB{}\\fR\n{}", esc(tag), esc(text));
}

/// The options section: every option of the parser's table (and help and
/// version), described as the help texts describe it, with the commands
/// it applies to.
fn options_roff() -> String {
    let mut out = String::new();
    for (short, long) in [('h', "help"), ('V', "version")] {
        let desc = describe(long).map(|l| l.desc).unwrap_or_default();
        let _ = writeln!(
            out,
            ".TP\n\\fB\\-{short}\\fR, \\fB\\-\\-{long}\\fR\n{}",
            esc(&desc)
        );
    }
    for o in cli::options() {
        // An option no help text describes still gets its entry; the
        // unit test below fails until a help text describes it.
        let line = describe(o.long()).unwrap_or_else(|| OptLine {
            spec: String::new(),
            desc: String::new(),
        });
        let mut spec = String::new();
        if let Some(s) = o.short() {
            let _ = write!(spec, "-{s}, ");
        }
        let _ = write!(spec, "--{}", o.long());
        if o.takes_value() {
            let var =
                metavar(&line, o.long()).unwrap_or_else(|| "VALUE".into());
            let _ = write!(spec, " {var}");
        }
        let _ =
            writeln!(out, ".TP\n{}\n{}", spec_roff(&spec), esc(&line.desc));
        if !o.global() {
            let cmds: Vec<&str> = Cmd::ALL
                .into_iter()
                .filter(|c| !c.hidden() && o.applies_to(*c))
                .map(Cmd::name)
                .collect();
            let _ =
                writeln!(out, ".br\n(Commands: {}.)", esc(&cmds.join(", ")));
        }
    }
    out
}

/// The whole page.
pub(crate) fn page() -> String {
    let top = cli::usage(None);
    let title = top.lines().next().unwrap_or_default();
    let what = title.split_once(": ").map_or(title, |(_, w)| w);
    let mut out = String::new();
    let _ = writeln!(
        out,
        ".\\\" Generated by `rivumi-mcp __man` (make man) from the help texts; do not edit.\n\
         .TH RIVUMI\\-MCP 1 \"\" \"rivumi-mcp {}\" \"User Commands\"\n\
         .nh\n.ad l",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(out, ".SH NAME\nrivumi\\-mcp \\- {}", esc(what));
    out.push_str(".SH SYNOPSIS\n\\fBrivumi\\-mcp\\fR [\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR...]\n");
    out.push_str(".SH DESCRIPTION\n");
    out.push_str(&prose_roff(DESCRIPTION));
    out.push_str(".SH COMMANDS\n");
    for c in Cmd::ALL.into_iter().filter(|c| !c.hidden()) {
        let text = cli::usage(Some(c));
        let first = text.lines().next().unwrap_or_default();
        let what = first.split_once(": ").map_or(first, |(_, w)| w);
        let _ = writeln!(out, ".SS {}\n{}", esc(c.name()), esc(what));
        // A command's own help under a subsection would restart the
        // numbering of headings: its USAGE/OPTIONS become bold lines.
        out.push_str(&body_roff(&text).replace(".SS \"", ".PP\n.B \""));
    }
    out.push_str(".SH OPTIONS\n");
    out.push_str(&options_roff());
    out.push_str(".SH CONFIGURATION\n");
    out.push_str(&prose_roff(CONFIGURATION));
    out.push_str(".SH ENVIRONMENT\n");
    for (name, text) in ENVIRONMENT {
        tagged(&mut out, name, text);
    }
    out.push_str(".SH FILES\n");
    for (name, text) in FILES {
        tagged(&mut out, name, text);
    }
    out.push_str(".SH EXIT STATUS\n");
    tagged(
        &mut out,
        "0",
        "Success (also --help, --version, and a closed stdout pipe).",
    );
    for (kind, text) in EXIT_STATUS {
        tagged(&mut out, &kind.exit_code().to_string(), text);
    }
    let (int, term) =
        (Kind::Signal(2).exit_code(), Kind::Signal(15).exit_code());
    tagged(
        &mut out,
        &format!("{int}, {term}"),
        "Interrupted by SIGINT or SIGTERM, after closing every server.",
    );
    out.push_str(".SH EXAMPLES\n.RS 4\n.nf\n");
    for text in help_texts() {
        for line in examples(&text) {
            let _ = writeln!(out, "{}", esc(line));
        }
    }
    out.push_str(".fi\n.RE\n");
    out.push_str(
        ".SH SEE ALSO\nREADME.md, GUIDE.md (the manual), SECURITY.md and DESIGN.md of the rivumi\\-mcp sources; \
         the Model Context Protocol: https://modelcontextprotocol.io\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_lines_join_continuations() {
        let text = "x\n\nOPTIONS:\n    -c, --config PATH   Config file\n        --refresh   One\n                    two\n\nEXIT: 0.\n";
        let lines = option_lines(text);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].spec, "-c, --config PATH");
        assert_eq!(lines[1].desc, "One two");
        assert_eq!(metavar(&lines[0], "config").as_deref(), Some("PATH"));
        assert_eq!(metavar(&lines[1], "refresh"), None);
    }

    #[test]
    fn every_option_is_described_by_a_help_text() {
        for o in cli::options() {
            let line = describe(o.long());
            assert!(
                line.is_some_and(|l| !l.desc.is_empty()),
                "--{}",
                o.long()
            );
        }
    }

    #[test]
    fn roff_escapes() {
        assert_eq!(esc(".x a-b \\ 1–2"), "\\&.x a\\-b \\e 1\\[u2013]2");
    }
}
