//! The command table: every command once, with its name, its summary,
//! which families of options it takes, and the parts of its help that are
//! not options (usage lines, prose, exit codes, examples). The options a
//! command's help lists come from [`super::opts`].

use crate::error::Kind;

/// A command. Adding one is a variant and an arm in each `match` here
/// (the compiler lists them), then its arm in the parser's `command`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmd {
    CheckConfig,
    Lock,
    List,
    Call,
    Task,
    Skills,
    Skill,
    Resources,
    Read,
    Prompts,
    Prompt,
    Batch,
    Serve,
    /// Its own small grammar (`src/daemon/mod.rs`): `main` hands it the
    /// words after `daemon`; it is here for help, the man page and
    /// completion.
    Daemon,
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
}

/// What a command's non-option words complete to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operand {
    /// Nothing (no operands, or free text such as a URI).
    Nothing,
    /// Server names, for every operand (`list a b`).
    Servers,
    /// A server name as the first operand (`call`, `read`, …).
    Server,
    /// A command name as the first operand (`help`).
    Command,
    /// A shell name as the first operand (`completions`).
    Shell,
}

/// The parts of a command's help that are not its options.
#[derive(Debug)]
pub(crate) struct Doc {
    /// The usage lines, each after `rivumi-mcp `.
    pub(crate) usage: &'static [&'static str],
    /// Prose after the usage: paragraphs separated by an empty line; a
    /// line indented by four spaces is shown as is; a line at column 0
    /// ending in `:` heads a section.
    pub(crate) about: &'static str,
    /// What exit 0 means.
    pub(crate) ok: &'static str,
    /// The other exit codes this command ends with, but 2 (usage) and
    /// 130/143 (interrupted), which every command has.
    /// (Lists of them, so that commands can share a list.)
    pub(crate) exits: &'static [&'static [(Kind, &'static str)]],
    pub(crate) examples: &'static [&'static str],
}

const NONE: Doc =
    Doc { usage: &[], about: "", ok: "", exits: &[], examples: &[] };

/// The exit codes of a command that starts servers.
const STARTS: &[(Kind, &str)] = &[
    (
        Kind::Refused,
        "refused: not allowed, an invalid entry, an unset variable",
    ),
    (Kind::Server, "a server could not start, died or broke the protocol"),
    (Kind::Timeout, "a deadline fired"),
    (Kind::Auth, "authentication required"),
];

/// The exit codes of a command that goes through the executor.
const EXECUTES: &[(Kind, &str)] = &[
    (
        Kind::Refused,
        "refused: not allowed, an invalid entry, drifted from the lock file",
    ),
    (
        Kind::Server,
        "a server could not start, died, broke the protocol or answered with an error",
    ),
    (Kind::Timeout, "a deadline fired"),
    (Kind::Auth, "authentication required"),
    (Kind::Denied, "denied by a pre-tool hook or the approval step"),
    (Kind::Truncated, "--max-output cut what was printed"),
];

/// The section on ad-hoc servers of the commands that take them as
/// operands' owner (`read`, `prompt`, `resources`, `prompts`).
macro_rules! adhoc_about {
    () => {
        "\
AD-HOC SERVERS:
With --stdio or --http, one server typed on the command line is used,
called adhoc (or --name): no config file and no allowlist entry are
needed, since you typed the command; every other rule applies (the
sanitised environment, the URL rules, approval, the journal, the bounds).
After the first operand of call, read and prompt (whose operands a script
may take from a server), --opt=VALUE is refused: an option and its value
are two words there; --pre-tool-hook, --sampling-command, --stdio and
--http go before the operands. -- ends the options: every word after it
is an operand."
    };
}

impl Cmd {
    /// Every command, in the order the help lists them (the hidden ones
    /// last).
    pub(crate) const ALL: [Cmd; 22] = [
        Cmd::CheckConfig,
        Cmd::Lock,
        Cmd::List,
        Cmd::Call,
        Cmd::Task,
        Cmd::Skills,
        Cmd::Skill,
        Cmd::Resources,
        Cmd::Read,
        Cmd::Prompts,
        Cmd::Prompt,
        Cmd::Batch,
        Cmd::Serve,
        Cmd::Daemon,
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
            Cmd::Task => "task",
            Cmd::Skills => "skills",
            Cmd::Skill => "skill",
            Cmd::Resources => "resources",
            Cmd::Read => "read",
            Cmd::Prompts => "prompts",
            Cmd::Prompt => "prompt",
            Cmd::Batch => "batch",
            Cmd::Serve => "serve",
            Cmd::Daemon => "daemon",
            Cmd::Login => "login",
            Cmd::Logout => "logout",
            Cmd::Discover => "discover",
            Cmd::Status => "status",
            Cmd::Completions => "completions",
            Cmd::Help => "help",
            Cmd::Servers => "__servers",
            Cmd::Man => "__man",
        }
    }

    /// Commands for tools, not people: neither the help, the man page nor
    /// completion shows them.
    pub(crate) fn hidden(self) -> bool {
        matches!(self, Cmd::Servers | Cmd::Man)
    }

    pub(crate) fn parse(name: &str) -> Option<Cmd> {
        Cmd::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The line in the top-level help's COMMANDS section, and the first
    /// line of the command's own help.
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
            Cmd::Task => {
                "Get, wait for, collect or cancel a task (call --detach)"
            }
            Cmd::Skills => "List the skills servers offer (SEP-2640)",
            Cmd::Skill => {
                "Fetch one skill, verified (digest, size, frontmatter)"
            }
            Cmd::Resources => {
                "List one server's resources and resource templates"
            }
            Cmd::Read => "Read one resource",
            Cmd::Prompts => "List one server's prompts",
            Cmd::Prompt => "Get one prompt",
            Cmd::Batch => {
                "Run JSON Lines requests from stdin over reused sessions"
            }
            Cmd::Serve => {
                "Be one MCP server for allowed servers, every call governed"
            }
            Cmd::Daemon => {
                "Keep servers warm between invocations (start, status, stop)"
            }
            Cmd::Login => "Log in to an OAuth-protected HTTP server",
            Cmd::Logout => "Remove a server's stored credential",
            Cmd::Discover => "Show a server's OAuth metadata (read-only)",
            Cmd::Status => "Show which servers have a stored credential",
            Cmd::Completions => "Print a shell completion script",
            Cmd::Help => "Show the help of a command",
            Cmd::Servers => "Print the configured server names",
            Cmd::Man => "Print the man page",
        }
    }

    /// Commands that start servers (deadlines, limits, journal apply).
    pub(crate) fn starts_servers(self) -> bool {
        matches!(
            self,
            Cmd::List
                | Cmd::Lock
                | Cmd::Call
                | Cmd::Task
                | Cmd::Skills
                | Cmd::Skill
                | Cmd::Resources
                | Cmd::Read
                | Cmd::Prompts
                | Cmd::Prompt
                | Cmd::Batch
                | Cmd::Serve
                | Cmd::Login
                | Cmd::Discover
        )
    }

    /// Commands that go through the executor (hooks, approval, bounds).
    pub(crate) fn executes(self) -> bool {
        matches!(
            self,
            Cmd::Call
                | Cmd::Read
                | Cmd::Prompt
                | Cmd::Batch
                | Cmd::Serve
                | Cmd::Skill
        )
    }

    /// Commands that speak MCP to a server (and so may step up).
    pub(crate) fn speaks_mcp(self) -> bool {
        self.starts_servers() && !matches!(self, Cmd::Login | Cmd::Discover)
    }

    /// Commands that take an ad-hoc server (`--stdio`, `--http`): those
    /// that speak MCP, but `lock` (a lock pins a project's servers).
    pub(crate) fn takes_adhoc(self) -> bool {
        self.speaks_mcp() && self != Cmd::Lock
    }

    /// Commands whose operands a script may take from what a server said
    /// (a tool or prompt name, a URI, an argument): after their first
    /// operand, one word may not be both an option and its value
    /// (`--opt=VALUE`), since one word is what a server chooses.
    pub(crate) fn operands_from_servers(self) -> bool {
        matches!(self, Cmd::Call | Cmd::Read | Cmd::Prompt | Cmd::Task)
    }

    /// What its operands are (completion offers them).
    pub(crate) fn operands(self) -> Operand {
        match self {
            Cmd::List | Cmd::Lock | Cmd::Skills => Operand::Servers,
            Cmd::Call
            | Cmd::Resources
            | Cmd::Read
            | Cmd::Prompts
            | Cmd::Prompt
            | Cmd::Login
            | Cmd::Logout
            | Cmd::Discover => Operand::Server,
            Cmd::Help => Operand::Command,
            Cmd::Completions => Operand::Shell,
            Cmd::CheckConfig
            | Cmd::Task
            | Cmd::Skill
            | Cmd::Batch
            | Cmd::Serve
            | Cmd::Daemon
            | Cmd::Status
            | Cmd::Servers
            | Cmd::Man => Operand::Nothing,
        }
    }

    // Long on purpose: a table, one arm of text per command; splitting it
    // would scatter the help it holds.
    /// Everything of the command's help but its options.
    pub(crate) fn doc(self) -> Doc {
        match self {
            Cmd::CheckConfig => Doc {
                usage: &["check-config [--strict] [--format human|json|github]"],
                about: "\
Validates every server of the file (allowed or not), reports every
problem with its line:column and JSON pointer, then shows a table of
servers with their fingerprints. Starts nothing.",
                ok: "valid (warnings allowed)",
                exits: &[&[(Kind::Negative, "invalid")]],
                examples: &[
                    "rivumi-mcp check-config",
                    "rivumi-mcp check-config --format github -c .mcp.json",
                ],
            },
            Cmd::Lock => Doc {
                usage: &[
                    "lock [SERVER...] [--lock PATH]",
                    "lock --check [SERVER...] [--format human|json|github]",
                ],
                about: "\
Starts the allowed servers (or the named ones) and writes everything
they show the model to .mcp.lock.json beside the config file: serverInfo,
protocol, instructions, and every tool, prompt, resource and resource
template definition, each with its SHA-256, plus the server's launch
fingerprint. The file is canonical JSON (same servers, same bytes): review
it and commit it. Rewriting it first prints what changed since.

With a lock file in place, call, batch, read and prompt refuse (exit 3)
an item whose definition differs from the lock, or is not in it; other
items keep working. --unlocked skips that for one command.",
                ok: "written, or unchanged",
                exits: &[&[
                    (Kind::Negative, "drift (--check)"),
                    (
                        Kind::Refused,
                        "refused: a broken lock file, a server not allowed",
                    ),
                    (Kind::Server, "a server could not start or broke the protocol"),
                    (Kind::Timeout, "a deadline fired"),
                    (Kind::Auth, "authentication required"),
                ]],
                examples: &[
                    "RIVUMI_MCP_ALLOWLIST=demo rivumi-mcp lock",
                    "rivumi-mcp lock --check --format github",
                ],
            },
            Cmd::List => Doc {
                usage: &[
                    "list [SERVER...] [--tools|--resources|--prompts|--all] [--grep PATTERN]",
                    "list SERVER TOOL   (or mcp__SERVER__TOOL)",
                ],
                about: concat!(
                    "\
Without SERVER, every allowed server is started (in parallel) and shown
in config order. Tools are shown as mcp__<server>__<tool> with their
classification: read (readOnlyHint true, not destructive) or execute.
With a lock file, items that drifted from it are marked. On a terminal a
long line is cut to its width, ending in '…'.

SERVER TOOL shows that one tool whole: its description, each parameter
(type, required, description, default, allowed values), its annotations
and output schema, and one call line that would work.

",
                    "\
AD-HOC SERVERS:
With --stdio or --http, one server typed on the command line is used,
called adhoc (or --name): no config file and no allowlist entry are
needed, since you typed the command; every other rule applies (the
sanitised environment, the URL rules, approval, the journal, the bounds).
list, call, resources, read, prompts, prompt and batch take them."
                ),
                ok: "listed",
                exits: &[STARTS],
                examples: &[
                    "RIVUMI_MCP_ALLOWLIST=demo rivumi-mcp list",
                    "rivumi-mcp list demo --all --json",
                    "rivumi-mcp list demo add",
                    "rivumi-mcp list --grep file",
                    "rivumi-mcp list --stdio 'npx -y @modelcontextprotocol/server-filesystem@2025.8.21 .'",
                ],
            },
            Cmd::Call => Doc {
                usage: &[
                    "call [OPTIONS] mcp__<server>__<tool> [key=value | key:=json ...]",
                    "call [OPTIONS] <server> <tool> [key=value | key:=json ...]",
                ],
                about: concat!(
                    "\
key=value is converted only to the type the tool's inputSchema declares
for key (a string property stays a string, even \"007\"), through anyOf,
oneOf, $ref, enum and const; when several fit, the most specific wins
(-v says so). key:=json takes raw JSON, key=@FILE a file's text,
key:=@FILE a file's JSON; \\@ and \\= keep a leading @ or = literal. A name
the schema does not list is an error; --args takes the whole arguments
object as is.

",
                    "\
OPTION PLACEMENT:
After the first operand, --opt=VALUE is refused: an option and its value
are two words there, so that one word a script took from a server (a tool
name, an argument) never becomes an option with its value; and
--pre-tool-hook, --sampling-command, --stdio and --http, which run a
program or choose the server, must come before the operands. -- ends the
options: every word after it is an operand."
                ),
                ok: "the tool succeeded",
                exits: &[&[(Kind::Negative, "the tool returned isError")], EXECUTES],
                examples: &[
                    "rivumi-mcp call mcp__demo__echo text=hello",
                    "rivumi-mcp call demo add a=1 b:=2 --yes",
                    "rivumi-mcp call demo echo text=@note.txt",
                    "echo '{\"text\":\"hi\"}' | rivumi-mcp call demo echo --args -",
                    "rivumi-mcp call demo add a=1 b=2 --approve mcp__demo__add",
                    "rivumi-mcp call --http http://127.0.0.1:8000/mcp echo text=hi",
                    "rivumi-mcp call --pre-tool-hook ./check.sh -- demo \"$tool\"",
                ],
            },
            Cmd::Task => Doc {
                usage: &[
                    "task get|wait|result|cancel <SERVER> <TASK_ID> [--json]",
                    "task list <SERVER> [--json]",
                ],
                about: "\
A task is a call that a server runs on after answering with a task id
(call --task waits for it; call --detach prints the server and the id and
exits). get shows its status; wait polls until it ends (at the server's
interval, within --timeout; Ctrl-C or the deadline cancels it) and prints
its result; result collects the result (waiting while the server does,
answering what it asks with --answer, --elicit or at the terminal);
cancel asks the server to cancel it; list shows the server's tasks.

A task id is a capability: whoever holds it may collect or cancel the
work. It is printed only where you asked for it; the journal keeps a hash
of it. Over the handshake-era HTTP wire a task lives in its session:
call --detach leaves the session open and records it (mode 0600, beside
the credential file), and task takes it up again until the task is
collected or cancelled. A stdio server's task lives in the server the
daemon keeps warm (call --detach on one needs a running daemon), and task
reaches that server, or says it is gone.",
                ok: "done (wait, result: the tool succeeded)",
                exits: &[&[(Kind::Negative, "the tool returned isError")], STARTS],
                examples: &[
                    "id=$(rivumi-mcp call --detach srv research topic=x | cut -d' ' -f2)",
                    "rivumi-mcp task wait srv \"$id\"",
                    "rivumi-mcp task list srv --json",
                ],
            },
            Cmd::Skills => Doc {
                usage: &["skills [SERVER...] [--json]"],
                about: "\
Lists the skills (SEP-2640, io.modelcontextprotocol/skills) of the allowed
servers (or the named ones) that declare the extension: name, version,
the digest of its SKILL.md and description. Only skills/list is asked:
no file of any skill is fetched.",
                ok: "listed",
                exits: &[STARTS],
                examples: &["rivumi-mcp skills", "rivumi-mcp skills srv --json"],
            },
            Cmd::Skill => Doc {
                usage: &["skill get <SERVER> <NAME|URI> [--save DIR] [--json]"],
                about: "\
Takes one skill's entry from skills/list (by NAME; two skills of one
name are refused, give the URI) or from skills/get (by the URI of its
SKILL.md, listed or not), reads its files with resources/read, SKILL.md
first, and verifies each against the entry before anything is printed or
written: its size, its SHA-256 digest and, for SKILL.md, its YAML
frontmatter field by field. The first mismatch stops the reading, and
skills/get is asked once for the current entry: a newer one is verified
afresh; otherwise nothing is printed or saved, and the exit code is 9. A
skill whose files are listed as dynamic is refused so too. Without
--save, SKILL.md is printed; with --save DIR, every file is written
under DIR/NAME/, never overwriting.",
                ok: "verified (and printed or saved)",
                exits: &[
                    &[(Kind::Integrity, "a file failed verification")],
                    STARTS,
                    &[(Kind::Denied, "denied by a pre-tool hook")],
                ],
                examples: &[
                    "rivumi-mcp skill get srv pdf-processing",
                    "rivumi-mcp skill get srv pdf-processing --save skills",
                    "rivumi-mcp skill get srv skill://acme/refunds/SKILL.md",
                ],
            },
            Cmd::Resources => Doc {
                usage: &["resources <SERVER> [--json]"],
                about: adhoc_about!(),
                ok: "listed",
                exits: &[STARTS],
                ..NONE
            },
            Cmd::Read => Doc {
                usage: &["read [OPTIONS] <SERVER> <URI> [--json] [--save DIR]"],
                about: adhoc_about!(),
                ok: "read",
                exits: &[EXECUTES],
                examples: &["rivumi-mcp read --json -- demo \"$uri\""],
            },
            Cmd::Prompts => Doc {
                usage: &["prompts <SERVER> [--json]"],
                about: adhoc_about!(),
                ok: "listed",
                exits: &[STARTS],
                ..NONE
            },
            Cmd::Prompt => Doc {
                usage: &[
                    "prompt [OPTIONS] <SERVER> <NAME> [key=value | key:=json ...]",
                ],
                about: concat!(
                    "\
Prompt arguments are strings (the protocol allows no other type): key:=json
sends the JSON's text, key=@FILE a file's text. Names the prompt does not
declare, and missing required ones, are errors before the request.

",
                    adhoc_about!()
                ),
                ok: "printed",
                exits: &[EXECUTES],
                ..NONE
            },
            Cmd::Batch => Doc {
                usage: &["batch [OPTIONS] < requests.jsonl"],
                about: "\
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
to the whole batch.",
                ok: "every request succeeded",
                exits: &[&[
                    (Kind::Negative, "a request failed"),
                    (Kind::Refused, "refused before any request (a broken lock file)"),
                ]],
                ..NONE
            },
            Cmd::Serve => Doc {
                usage: &[
                    "serve [--servers a,b] [OPTIONS]",
                    "serve --listen 127.0.0.1:PORT [--token-env VAR] [OPTIONS]",
                    "serve --dry-run [--json]",
                ],
                about: "\
Speaks MCP to its host (an agent, an editor, an SDK client) on stdin and
stdout, or over Streamable HTTP with --listen, in both eras (initialize
up to 2025-11-25, and 2026-07-28). Behind it are the allowed servers of
the config (RIVUMI_MCP_ALLOWLIST and pins as they are at start), started
on first use and closed when serve ends. The host sees tools and prompts
named SERVER__NAME and the servers' resources; every call, read and
prompt goes through the executor: the lock, pre-tool hooks, approval, the
output bound and the journal. A refused call is a tool result with
isError: true.

APPROVAL:
A call classified execute is asked of the host (an elicitation form) when
it declared elicitation; otherwise it is denied, unless --yes, or an
--approve pattern names the tool (mcp__SERVER__TOOL, * and ? glob).

THE HTTP FRONT:
--listen binds a loopback address only. Every request needs
Authorization: Bearer TOKEN (printed once on stderr, or the value of the
variable --token-env names); Host must be a loopback name and an Origin
one that --allow-origin names; no CORS. It runs until it is ended.",
                ok: "the host closed its input (stdio); the exposed items were printed (--dry-run)",
                exits: &[STARTS],
                examples: &[
                    "RIVUMI_MCP_ALLOWLIST=demo rivumi-mcp serve",
                    "rivumi-mcp serve --dry-run --json",
                    "rivumi-mcp serve --listen 127.0.0.1:8931 --token-env MY_TOKEN",
                    "rivumi-mcp serve --approve 'mcp__github__list_*'",
                ],
            },
            Cmd::Login => Doc {
                usage: &[
                    "login <SERVER> [--no-browser] [--timeout SECS]",
                    "login <SERVER> --device [--timeout SECS]",
                    "login <SERVER> --refresh",
                ],
                about: "\
Runs the authorization-code flow with PKCE (S256) and state through a
loopback callback on 127.0.0.1, for the client configured in the server's
\"oauth\" block, and stores the token in the credential file (0600).
The URL is always printed; the browser is RIVUMI_MCP_BROWSER, else
xdg-open (open on macOS), run without a shell. With --no-browser, paste
the address the browser ended at (or the code) on stdin instead.

With --device (or \"grant\": \"device_code\"), the device authorization
grant (RFC 8628): open the printed URL on any device and enter the code;
no listener is opened.

Without a browser, as the \"oauth\" block says: client_credentials (a
secret, or private_key_jwt with client_key_file), \"grant\": \"jwt_bearer\"
(a workload identity token from assertion_file or assertion_env_var) or
\"grant\": \"enterprise\" (an IdP token exchanged at idp_token_endpoint);
\"dpop\" binds the token to a key (RFC 9449).",
                ok: "logged in; the credential is stored",
                exits: &[&[
                    (Kind::Refused, "refused: not allowed, no \"oauth\" block, an unsafe credential file"),
                    (Kind::Server, "the authorization server failed or answered with an error"),
                    (Kind::Timeout, "the browser did not come back in time"),
                    (Kind::Auth, "the authorization was refused"),
                ]],
                ..NONE
            },
            Cmd::Logout => Doc {
                usage: &["logout <SERVER>"],
                ok: "removed (or there was nothing to remove)",
                exits: &[&[(
                    Kind::Refused,
                    "refused: an invalid config, an unsafe credential file",
                )]],
                ..NONE
            },
            Cmd::Discover => Doc {
                usage: &["discover <SERVER> [--json]"],
                about: "\
Sends one unauthenticated request, reads the 401's WWW-Authenticate, the
protected-resource metadata (RFC 9728) and each authorization server's
metadata (RFC 8414 / OpenID Connect), and prints them with a suggested
\"oauth\" block. Changes no file.",
                ok: "shown",
                exits: &[&[
                    (Kind::Refused, "refused: not allowed, not an HTTP server, a URL the rules refuse"),
                    (Kind::Server, "the server or its metadata could not be read"),
                    (Kind::Timeout, "a deadline fired"),
                ]],
                ..NONE
            },
            Cmd::Daemon => Doc {
                usage: &[
                    "daemon start [--foreground] [--idle DURATION]",
                    "daemon status [--json]",
                    "daemon stop",
                ],
                about: "\
Keeps servers warm between invocations (stdio servers, sandboxed ones in
their sandbox, and HTTP servers with the credential the invocation settles;
never one whose sandbox a run lifts or one step-up or refresh may renew
mid-run). While the daemon
runs, list, call, read, prompt, resources, prompts, batch and lock get
their sessions from it; every check (allowlist, pins, lock, hooks,
approval, output bound, journal) still runs in the invocation. Nothing
starts a daemon but daemon start; --no-daemon or RIVUMI_MCP_DAEMON=off
bypass it. daemon comes first on the command line, its options after it.

The socket is $XDG_RUNTIME_DIR/rivumi-mcp/daemon.sock (or
/tmp/rivumi-mcp-UID/daemon.sock), in a 0700 directory of the user's; a
connection from another uid is refused and logged. The daemon exits after
holding no server for 10 minutes (or --idle, when longer).",
                ok: "started, shown or stopped",
                exits: &[&[
                    (Kind::Negative, "status or stop: no daemon runs"),
                    (Kind::Refused, "refused: an unsafe socket directory, a daemon already runs"),
                ]],
                examples: &[
                    "rivumi-mcp daemon start --idle 10m",
                    "rivumi-mcp daemon status --json",
                    "rivumi-mcp daemon stop",
                ],
            },
            Cmd::Status => Doc {
                usage: &["status [--json]"],
                about: "\
Shows, per HTTP server, whether a credential is stored, for which URL,
how it is obtained and presented (METHOD: the grant, the client
authentication, +dpop for a DPoP-bound token), and when it expires.
Never the token.",
                ok: "shown",
                exits: &[&[(
                    Kind::Refused,
                    "refused: an invalid config, an unsafe credential file",
                )]],
                ..NONE
            },
            Cmd::Completions => Doc {
                usage: &["completions <bash|zsh|fish>"],
                about: "\
Completes commands, options, option values from a fixed set, paths, and
server names from the config in effect (-c honoured), which it reads
without starting a server, contacting a URL or reading a credential.
Tool names are not completed: only a running server knows them.",
                ok: "printed",
                examples: &[
                    "source <(rivumi-mcp completions bash)",
                    "rivumi-mcp completions zsh > ~/.zfunc/_rivumi-mcp",
                    "rivumi-mcp completions fish > ~/.config/fish/completions/rivumi-mcp.fish",
                ],
                ..NONE
            },
            Cmd::Help => Doc {
                usage: &["help [COMMAND]"],
                ok: "printed",
                ..NONE
            },
            Cmd::Servers => Doc {
                usage: &["__servers [-c PATH]"],
                ok: "printed",
                ..NONE
            },
            Cmd::Man => Doc { usage: &["__man"], ok: "printed", ..NONE },
        }
    }
}

impl std::fmt::Display for Cmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
