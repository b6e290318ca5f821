//! `rivumi-mcp __man`: the man page, `rivumi-mcp.1`, generated from the
//! command line's definitions.
//!
//! One source: each command's section is built from the command table
//! (usage lines, prose, exit codes, examples: `cli::Cmd::doc`) and the
//! option table (which options it takes); the OPTIONS section lists every
//! option of the table with its one description and the commands it
//! applies to. No help text is parsed back. Only what the command line
//! does not define (configuration, the environment, files, the meaning of
//! each exit code) is written here, and the exit code numbers come from
//! [`Kind::exit_code`]. `make man` writes the page; a test fails when the
//! checked-in one differs.

use std::fmt::Write as _;

use crate::cli::{self, Cmd};
use crate::error::Kind;

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
apply to the command is a usage error. After the first operand of call, read \
and prompt, whose operands a script may take from a server, --opt=VALUE is \
refused: an option and its value are two words there, so that one word a \
server chose never becomes an option with its value. -- ends the options: \
every word after it is an operand.";

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
/// shown verbatim; a line at column 0 ending in `:` is a bold heading.
fn prose_roff(text: &str) -> String {
    let mut out = String::new();
    let mut verbatim = false;
    for line in text.lines() {
        let is_verbatim = line.starts_with("    ");
        if verbatim && !is_verbatim {
            out.push_str(".fi\n.RE\n");
        }
        if !is_verbatim && line.len() > 1 && line.ends_with(':') {
            let _ = writeln!(
                out,
                ".PP\n.B \"{}\"\n.br",
                esc(&line[..line.len() - 1])
            );
        } else if line.is_empty() {
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

/// The options section: every option of the table (and help and
/// version), with its description and the commands it applies to.
fn options_roff() -> String {
    let mut out = String::new();
    for (spec, help) in cli::HELP_FLAGS {
        let _ = writeln!(out, ".TP\n{}\n{}", spec_roff(spec), esc(help));
    }
    for o in cli::options() {
        let spec = o.spec();
        let _ = writeln!(
            out,
            ".TP\n{}\n{}",
            spec_roff(spec.trim_start()),
            esc(o.help())
        );
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

/// A command's section: usage, prose, the options it takes (described
/// under OPTIONS) and its exit codes.
fn command_roff(c: Cmd) -> String {
    let doc = c.doc();
    let mut out = String::new();
    let _ = writeln!(out, ".SS {}\n{}", esc(c.name()), esc(&cli::title(c)));
    out.push_str(".PP\n.RS 4\n.nf\n");
    for u in doc.usage {
        let _ = writeln!(out, "{}", esc(&format!("rivumi-mcp {u}")));
    }
    out.push_str(".fi\n.RE\n");
    if !doc.about.is_empty() {
        out.push_str(".PP\n");
        out.push_str(&prose_roff(doc.about));
    }
    for (group, opts) in cli::option_groups(c) {
        if group == cli::Group::Global {
            continue;
        }
        let specs: Vec<String> =
            opts.iter().map(|o| spec_roff(o.spec().trim_start())).collect();
        let _ = writeln!(
            out,
            ".PP\n.B \"{}\"\n.br\n{}",
            esc(&title_case(group.heading())),
            specs.join(", ")
        );
    }
    out.push_str(".PP\n.B \"Exit codes\"\n");
    for (code, text) in cli::exit_rows(c) {
        let _ = writeln!(out, ".TP\n\\fB{}\\fR\n{}", esc(&code), esc(&text));
    }
    out
}

/// `DEADLINES AND LIMITS` as `Deadlines and limits`.
fn title_case(heading: &str) -> String {
    let lower = heading.to_lowercase();
    let mut chars = lower.chars();
    match chars.next() {
        Some(f) => f.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The whole page.
pub(crate) fn page() -> String {
    let what = "a command-line client for the Model Context Protocol";
    let mut out = String::new();
    let _ = writeln!(
        out,
        ".\\\" Generated by `rivumi-mcp __man` (make man) from the option and command tables; do not edit.\n\
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
        out.push_str(&command_roff(c));
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
    for c in Cmd::ALL.into_iter().filter(|c| !c.hidden()) {
        for line in c.doc().examples {
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
    fn every_option_and_command_is_on_the_page() {
        let page = page();
        for o in cli::options() {
            let long = format!("\\-\\-{}", o.long().replace('-', "\\-"));
            assert!(page.contains(&long), "{long}");
        }
        for c in Cmd::ALL.into_iter().filter(|c| !c.hidden()) {
            let name = c.name().replace('-', "\\-");
            assert!(page.contains(&format!("\n.SS {name}\n")), "{c}");
        }
    }

    #[test]
    fn roff_escapes() {
        assert_eq!(esc(".x a-b \\ 1–2"), "\\&.x a\\-b \\e 1\\[u2013]2");
    }
}
