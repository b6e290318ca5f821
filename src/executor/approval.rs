//! The approval step and the prompt on the controlling terminal.
//!
//! `read` runs without asking; `execute` is denied under `--read-only`,
//! runs with `--yes`, and otherwise needs a yes typed at `/dev/tty` (never
//! stdin, which may carry data). Everything the prompt shows is sanitised.

use std::io::{Read, Write};
use std::time::Duration;

use super::{Action, Executor};
use crate::error::{Error, Kind};
use crate::naming::Class;
use crate::{render, sys, term};

/// How long the approval prompt waits for an answer.
const PROMPT_TIMEOUT: Duration = Duration::from_secs(300);
/// How much of the arguments the approval prompt shows.
const PROMPT_ARGS: usize = 4000;
/// How many lines of the tool's description the approval prompt shows.
const PROMPT_DESC_LINES: usize = 12;
/// How much of one description line the approval prompt shows.
const PROMPT_DESC_LINE: usize = 300;

/// Who is asked to approve an `execute` call when no flag decides it.
pub(crate) trait Asker {
    fn ask(&self, server: &str, action: &Action<'_>, class: Class) -> Asked;
}

/// An asker's answer; `how` is what the journal records.
pub(crate) enum Asked {
    Yes { how: &'static str },
    No { how: &'static str, why: String },
}

/// The operator at the controlling terminal: every command but `serve`.
pub(crate) struct Terminal;

impl Asker for Terminal {
    fn ask(&self, server: &str, action: &Action<'_>, class: Class) -> Asked {
        let name = term::line(&action.name()).into_owned();
        match prompt(server, action, class) {
            Prompted::Yes => Asked::Yes { how: "prompt" },
            Prompted::No => Asked::No {
                how: "prompt",
                why: format!("'{name}' was not approved"),
            },
            Prompted::NoTerminal => Asked::No {
                how: "no-terminal",
                why: format!(
                    "'{name}' is classified execute and needs approval, \
                     but there is no terminal to ask; pass --yes (or \
                     --approve {}) to approve it",
                    term::line(&action.qualified(server))
                ),
            },
        }
    }
}

impl Executor {
    /// The approval step: `Ok(how)` or `Err((how, denial))`.
    pub(super) fn approve(
        &self,
        server: &str,
        action: &Action<'_>,
        class: Class,
        asker: &dyn Asker,
    ) -> std::result::Result<&'static str, (&'static str, Error)> {
        if class == Class::Read {
            return Ok("read");
        }
        let name = term::line(&action.name()).into_owned();
        if self.policy.read_only {
            return Err((
                "read-only",
                Error::new(
                    Kind::Denied,
                    format!(
                        "'{name}' is classified execute and --read-only \
                         denies every execute call"
                    ),
                ),
            ));
        }
        if self.policy.yes {
            return Ok("flag");
        }
        if matches!(action, Action::Tool { .. })
            && self.policy.approving(&action.qualified(server)).is_some()
        {
            return Ok("pattern");
        }
        match asker.ask(server, action, class) {
            Asked::Yes { how } => Ok(how),
            Asked::No { how, why } => {
                Err((how, Error::new(Kind::Denied, why)))
            }
        }
    }
}

enum Prompted {
    Yes,
    No,
    NoTerminal,
}

/// Asks on the controlling terminal (never stdin, which may carry data or
/// a hostile echo). Everything shown is sanitised.
fn prompt(server: &str, action: &Action<'_>, class: Class) -> Prompted {
    use std::io::IsTerminal;
    let interactive =
        std::io::stdin().is_terminal() || std::io::stderr().is_terminal();
    let tty =
        std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty");
    let (true, Ok(mut tty)) = (interactive, tty) else {
        return Prompted::NoTerminal;
    };
    let text = prompt_text(server, action, class);
    if tty.write_all(text.as_bytes()).and_then(|_| tty.flush()).is_err() {
        return Prompted::NoTerminal;
    }
    use std::os::fd::AsRawFd;
    if !sys::wait_readable(tty.as_raw_fd(), PROMPT_TIMEOUT) {
        let _ = tty.write_all(b"\n(no answer; not approved)\n");
        return Prompted::No;
    }
    let mut buf = [0u8; 64];
    let n = tty.read(&mut buf).unwrap_or(0);
    let answer =
        String::from_utf8_lossy(&buf[..n]).trim().to_ascii_lowercase();
    if answer == "y" || answer == "yes" { Prompted::Yes } else { Prompted::No }
}

/// What the prompt shows, ending in the question: server, tool,
/// classification, the tool's description (bounded, with a marker for
/// what is left out) and the arguments, all sanitised.
fn prompt_text(server: &str, action: &Action<'_>, class: Class) -> String {
    let args =
        serde_json::to_string_pretty(&action.arguments()).unwrap_or_default();
    let args = term::sanitize(&args, term::Lines::Keep);
    let (shown, cut) = if args.len() > PROMPT_ARGS {
        let mut end = PROMPT_ARGS;
        while !args.is_char_boundary(end) {
            end -= 1;
        }
        (&args[..end], args.len() - end)
    } else {
        (&args[..], 0)
    };
    let mut text = format!(
        "rivumi-mcp: approve this call?\n  server:         {}\n  tool:           \
         {} ({})\n  classification: {}\n",
        term::line(server),
        term::line(&action.name()),
        term::line(&action.qualified(server)),
        class.label()
    );
    let description = match action {
        Action::Tool { tool, .. } => tool.def.get("description"),
        _ => None,
    };
    if let Some(d) = description.and_then(serde_json::Value::as_str) {
        let (lines, more) = render::description_lines(d, PROMPT_DESC_LINES);
        if !lines.is_empty() {
            text.push_str("  description:\n");
        }
        for l in lines {
            text.push_str("    ");
            text.push_str(&term::clip(&term::line(l), PROMPT_DESC_LINE));
            text.push('\n');
        }
        if more > 0 {
            text.push_str(&format!("    {}\n", render::more_lines(more)));
        }
    }
    text.push_str("  arguments:\n");
    for l in shown.lines() {
        text.push_str("    ");
        text.push_str(l);
        text.push('\n');
    }
    if cut > 0 {
        text.push_str(&format!(
            "  [arguments shortened for display: {cut} more bytes not shown]\n"
        ));
    }
    text.push_str("Run it? [y/N] ");
    text
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::*;
    use crate::tool::Tool;

    /// The prompt for an execute tool `t` of server `s` defined by `def`,
    /// called without arguments.
    fn prompt_for(def: Value) -> String {
        let tool = Tool {
            name: "t".into(),
            qualified: "mcp__s__t".into(),
            class: Class::Execute,
            def,
            headers: vec![],
            listed_twice: false,
        };
        let arguments = Map::new();
        let action = Action::Tool { tool: &tool, arguments: &arguments };
        prompt_text("s", &action, Class::Execute)
    }

    #[test]
    fn the_prompt_shows_a_bounded_sanitised_description_with_a_marker() {
        let lines: Vec<String> =
            (1..=15).map(|i| format!("line {i}")).collect();
        let mut description = lines.join("\n");
        description.insert_str(0, "\u{1b}[2J");
        description.push_str(&format!("\n{}", "y".repeat(1000)));
        let text =
            prompt_for(json!({"name": "t", "description": description}));
        assert!(
            text.contains("  description:\n    \\x1b[2Jline 1\n    line 2\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "    line 12\n    (4 more lines)\n  arguments:\n    {}\n"
            ),
            "{text}"
        );
        assert!(!text.contains("line 13"), "{text}");
        assert!(!text.contains('\u{1b}'));
        // Without a description there is no section.
        let text = prompt_for(json!({"name": "t"}));
        assert!(!text.contains("description"), "{text}");
    }

    #[test]
    fn one_overlong_description_line_is_clipped_with_a_marker() {
        let text = prompt_for(json!({"description": "z".repeat(1000)}));
        let clipped = format!("    {}… [700 more bytes]\n", "z".repeat(300));
        assert!(text.contains(&clipped), "{text}");
    }
}
