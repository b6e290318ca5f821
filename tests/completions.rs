//! Installing it like a tool: the completion scripts run in real bash, zsh
//! and fish against a real `.mcp.json`, the man page against the help
//! texts and groff, and `make install` / `make uninstall` into a DESTDIR.
//!
//! zsh, fish, groff and man come from scripts/ci-setup.sh in CI; a test
//! whose program is missing here says so on stderr and passes.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::PathBuf;

use crate::util::{Dir, TestCommand, assert_contains, bin, repo_root};

/// A stdio server that would leave a mark if started, and an HTTP server
/// on a listening loopback socket that would see a connection: both
/// allowed, so nothing but completion's own restraint keeps them quiet.
struct Servers {
    dir: Dir,
    listener: TcpListener,
}

impl Servers {
    fn new(test: &str) -> Servers {
        let dir = Dir::new(test);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let mark = dir.path("started");
        let config = serde_json::json!({"mcpServers": {
            "alpha": {"command": "/bin/sh",
                      "args": ["-c", format!("touch {}", mark.display())]},
            "beta-2": {"type": "http",
                       "url": format!("http://127.0.0.1:{port}/mcp")},
            "bad name": {"command": "x"},
            // Would read as options when typed: never offered (#22).
            "--config": {"command": "x"},
            "-e": {"command": "x"},
        }});
        dir.write(".mcp.json", config.to_string());
        dir.write(
            "other.json",
            r#"{"mcpServers": {"gamma": {"command": "x"}}}"#,
        );
        Servers { dir, listener }
    }

    /// Nothing was started and nothing connected.
    #[track_caller]
    fn assert_untouched(&self) {
        assert!(!self.dir.path("started").exists(), "a server was started");
        match self.listener.accept() {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            other => panic!("the HTTP server was contacted: {other:?}"),
        }
    }

    /// `program` (a shell) with the binary first on PATH and every server
    /// allowed; `None`, after saying so, when the shell is not installed.
    fn shell(&self, program: &str) -> Option<TestCommand> {
        let path = std::env::var("PATH").unwrap_or_default();
        let found = path
            .split(':')
            .map(|d| PathBuf::from(d).join(program))
            .find(|p| p.is_file());
        let Some(found) = found else {
            eprintln!(
                "SKIPPED: {program} is not installed (scripts/ci-setup.sh installs it)"
            );
            return None;
        };
        let dir = bin().parent().unwrap().display().to_string();
        let mut cmd = self.dir.program(found);
        cmd.env("PATH", format!("{dir}:{path}"))
            .env("RIVUMI_MCP_ALLOWLIST", "alpha,beta-2,gamma");
        Some(cmd)
    }
}

/// Runs `prelude` (which loads the script and defines `t N WORDS...`,
/// printing `N=>candidates`) in `shell`, then `t` on each case, and checks
/// each case's candidates.
fn check_cases(
    s: &Servers,
    shell: &str,
    prelude: &str,
    cases: &[(&str, &str)],
) {
    let Some(mut cmd) = s.shell(shell) else { return };
    let mut script = prelude.to_string();
    for (i, (words, _)) in cases.iter().enumerate() {
        script.push_str(&format!("t {i} {words}\n"));
    }
    let out = match shell {
        "zsh" => cmd.args(["-f", "-c", &script]).run(),
        _ => cmd.args(["-c", &script]).run(),
    };
    assert_eq!(out.code, Some(0), "{shell}: {out:?}");
    assert_eq!(out.stderr, "", "{shell} printed errors");
    s.assert_untouched();
    let got: Vec<(&str, &str)> =
        out.stdout.lines().filter_map(|l| l.split_once("=>")).collect();
    for (i, (words, want)) in cases.iter().enumerate() {
        let found = got.iter().find(|(n, _)| *n == i.to_string());
        let found = found.map(|(_, c)| c.trim());
        assert_eq!(found, Some(*want), "{shell}: completing {words}");
    }
}

const COMMANDS: &str = "check-config lock list call task skills skill resources read prompts prompt batch serve daemon login \
                        logout discover status completions help";

#[test]
fn bash_completes_commands_servers_and_values() {
    let s = Servers::new("completions_bash");
    let script = s.dir.command(["completions", "bash"]).assert_exit(0).stdout;
    s.dir.write("c.bash", &script);
    let Some(mut n) = s.shell("bash") else { return };
    n.args(["-n", "c.bash"]).assert_exit(0);

    // Loaded as the README says; the function `complete` registered is
    // called as bash calls it, with COMP_WORDS split at '=' as bash does.
    let prelude = r#"
        source <(rivumi-mcp completions bash)
        [[ $(complete -p rivumi-mcp) == 'complete -F _rivumi_mcp rivumi-mcp' ]] || exit 9
        t() {
            local n=$1; shift
            COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=()
            _rivumi_mcp
            printf '%s=>%s\n' "$n" "${COMPREPLY[*]}"
        }
    "#;
    check_cases(
        &s,
        "bash",
        prelude,
        &[
            ("rivumi-mcp ''", COMMANDS),
            ("rivumi-mcp ch", "check-config"),
            ("rivumi-mcp call ''", "alpha beta-2"),
            ("rivumi-mcp call b", "beta-2"),
            ("rivumi-mcp call mcp__", "mcp__alpha__ mcp__beta-2__"),
            ("rivumi-mcp call alpha ''", ""),
            ("rivumi-mcp -c other.json call ''", "gamma"),
            ("rivumi-mcp call --config = other.json ''", "gamma"),
            ("rivumi-mcp call --config=other.json ''", "gamma"),
            ("rivumi-mcp -c missing.json call ''", ""),
            ("rivumi-mcp list alpha ''", "alpha beta-2"),
            ("rivumi-mcp check-config --format ''", "human json github"),
            ("rivumi-mcp check-config --format = g", "github"),
            ("rivumi-mcp call --approve ''", "execute"),
            ("rivumi-mcp list --timeout ''", ""),
            ("rivumi-mcp list --t", "--timeout --tools"),
            ("rivumi-mcp --v", "--verbose --version"),
            ("rivumi-mcp help l", "lock list login logout"),
            ("rivumi-mcp completions ''", "bash zsh fish"),
            ("rivumi-mcp -c oth", "other.json"),
        ],
    );
}

#[test]
fn zsh_script_loads_and_completes() {
    let s = Servers::new("completions_zsh");
    let prelude = r#"
        autoload -Uz compinit && compinit -u -d "$PWD/zcompdump"
        source <(rivumi-mcp completions zsh)
        t() {
            local n=$1; shift
            local REPLY; local -a reply
            words=("$@"); CURRENT=$#words
            _rivumi_mcp_candidates
            print -r -- "$n=>$REPLY:${(j: :)reply}"
        }
    "#;
    let commands = format!("words:{COMMANDS}");
    check_cases(
        &s,
        "zsh",
        prelude,
        &[
            ("rivumi-mcp ''", &commands),
            ("rivumi-mcp call ''", "words:alpha beta-2"),
            ("rivumi-mcp call mcp__", "nospace:mcp__alpha__ mcp__beta-2__"),
            ("rivumi-mcp -c other.json list ''", "words:gamma"),
            ("rivumi-mcp check-config --format ''", "words:human json github"),
            ("rivumi-mcp -c ''", "files:"),
            ("rivumi-mcp read --save ''", "dirs:"),
        ],
    );
}

/// The zsh script as installed (autoloaded from fpath by compinit) and a
/// real TAB in an interactive zsh on a pseudo-terminal.
#[test]
fn zsh_tab_in_a_terminal_offers_server_names() {
    let s = Servers::new("completions_zsh_tab");
    let script = s.dir.command(["completions", "zsh"]).assert_exit(0).stdout;
    s.dir.write("zfunc/_rivumi-mcp", script);
    let driver = r#"
        zmodload zsh/zpty
        zpty z 'zsh -f -i'
        zpty -w z 'PS1="> "; fpath=("$PWD/zfunc" $fpath); autoload -Uz compinit; compinit -u -d "$PWD/zdump"'
        zpty -w -n z $'rivumi-mcp call \t'
        out=
        for i in {1..100}; do
            while zpty -r -t z chunk; do out+=$chunk; done
            [[ $out == *beta-2* ]] && break
            sleep 0.1
        done
        zpty -d z
        print -r -- "${out#*rivumi-mcp call}"
    "#;
    let Some(mut zsh) = s.shell("zsh") else { return };
    let out = zsh.args(["-f", "-c", driver]).run();
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_contains(&out.stdout, "alpha");
    assert_contains(&out.stdout, "beta-2");
    assert!(!out.stdout.contains("bad name"), "{}", out.stdout);
    s.assert_untouched();
}

#[test]
fn fish_script_loads_and_completes() {
    let s = Servers::new("completions_fish");
    // `complete -C` asks fish itself what TAB would offer (sorted here).
    let prelude = r#"
        rivumi-mcp completions fish | source
        function t
            set -l got (complete -C"$argv[2..]" | string replace -r '\t.*' '' | sort)
            echo "$argv[1]=>$got"
        end
    "#;
    let mut commands: Vec<&str> = COMMANDS.split(' ').collect();
    commands.sort();
    let commands = commands.join(" ");
    check_cases(
        &s,
        "fish",
        prelude,
        &[
            ("'rivumi-mcp '", &commands),
            ("'rivumi-mcp call '", "alpha beta-2"),
            ("'rivumi-mcp call mcp__demo__x --app'", "--approve"),
            ("'rivumi-mcp -c other.json list '", "gamma"),
            ("'rivumi-mcp check-config --format '", "github human json"),
            ("'rivumi-mcp list --t'", "--timeout --tools"),
            ("'rivumi-mcp completions '", "bash fish zsh"),
        ],
    );
}

#[test]
fn servers_lists_valid_names_and_starts_nothing() {
    let s = Servers::new("completions_servers");
    let out = s
        .dir
        .command(["__servers"])
        .env("RIVUMI_MCP_ALLOWLIST", "alpha,beta-2")
        .assert_exit(0);
    assert_eq!(out.stdout, "alpha\nbeta-2\n");
    let out = s.dir.command(["__servers", "-c", "other.json"]).assert_exit(0);
    assert_eq!(out.stdout, "gamma\n");
    s.assert_untouched();
    let out =
        s.dir.command(["__servers", "-c", "missing.json"]).assert_exit(2);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "missing.json");
}

#[test]
fn completions_usage_and_hidden_commands() {
    let dir = Dir::new("completions_usage");
    let out = dir.command(["completions", "tcsh"]).assert_exit(2);
    assert_contains(
        &out.stderr,
        "unknown shell 'tcsh' [pick from: bash, zsh, fish]",
    );
    let out = dir.command(["completions"]).assert_exit(2);
    assert_contains(&out.stderr, "missing argument SHELL");
    let help = dir.command(["--help"]).assert_exit(0).stdout;
    assert_contains(&help, "completions");
    assert!(!help.contains("__"), "hidden commands in the help:\n{help}");
}

/// Every `--option` a help text names.
fn long_options(text: &str) -> Vec<String> {
    let mut found = vec![];
    for (i, _) in text.match_indices("--") {
        let name: String = text[i + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if !name.is_empty() && !found.contains(&name) {
            found.push(name);
        }
    }
    found
}

#[test]
fn man_page_is_current_and_covers_the_help() {
    let dir = Dir::new("completions_man");
    let page = dir.command(["__man"]).assert_exit(0).stdout;
    let checked_in =
        std::fs::read_to_string(repo_root().join("rivumi-mcp.1")).unwrap();
    assert!(page == checked_in, "rivumi-mcp.1 is stale: run `make man`");

    let top = dir.command(["--help"]).assert_exit(0).stdout;
    let commands: Vec<&str> = top
        .lines()
        .skip_while(|l| *l != "COMMANDS:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(commands.len() >= 10, "{commands:?}");
    let mut helps = vec![top.clone()];
    for c in &commands {
        assert_contains(&page, &format!("\n.SS {}\n", c.replace('-', "\\-")));
        helps.push(dir.command([c, "--help"]).assert_exit(0).stdout);
    }
    for help in &helps {
        for o in long_options(help) {
            assert_contains(
                &page,
                &format!("\\-\\-{}", o.replace('-', "\\-")),
            );
        }
    }
    for section in [
        "COMMANDS",
        "OPTIONS",
        "CONFIGURATION",
        "ENVIRONMENT",
        "FILES",
        "EXIT STATUS",
        "EXAMPLES",
    ] {
        assert_contains(&page, &format!("\n.SH {section}\n"));
    }
}

#[test]
fn man_page_renders_without_warnings() {
    let s = Servers::new("completions_man_render");
    let Some(mut groff) = s.shell("groff") else { return };
    let page = repo_root().join("rivumi-mcp.1");
    let out = groff.arg("-ww").args(["-man", "-Tutf8", "-z"]).arg(&page).run();
    assert_eq!((out.code, out.stderr.as_str()), (Some(0), ""), "groff -ww");
    let Some(mut man) = s.shell("man") else { return };
    let out = man
        .env("MANWIDTH", "80")
        .args(["--warnings=w", "-l"])
        .arg(&page)
        .run();
    assert_eq!((out.code, out.stderr.as_str()), (Some(0), ""), "man -l");
    assert_contains(&out.stdout, "EXIT STATUS");
}

#[test]
fn make_install_and_uninstall_under_destdir() {
    let s = Servers::new("completions_make_install");
    let Some(mut make) = s.shell("make") else { return };
    let dest = s.dir.path("dest");
    let vars = [
        format!("DESTDIR={}", dest.display()),
        "PREFIX=/opt/rmcp".to_string(),
        format!("BIN={}", bin().display()),
    ];
    make.args(["-s", "-C"])
        .arg(repo_root())
        .arg("install")
        .args(&vars)
        .assert_exit(0);
    let root = dest.join("opt/rmcp");
    let files = [
        "bin/rivumi-mcp",
        "share/man/man1/rivumi-mcp.1",
        "share/bash-completion/completions/rivumi-mcp",
        "share/zsh/site-functions/_rivumi-mcp",
        "share/fish/vendor_completions.d/rivumi-mcp.fish",
    ];
    for f in files {
        assert!(root.join(f).is_file(), "{f} not installed");
    }
    let bash = std::fs::read_to_string(root.join(files[2])).unwrap();
    assert_eq!(
        bash,
        s.dir.command(["completions", "bash"]).assert_exit(0).stdout
    );
    let out =
        s.dir.program(root.join(files[0])).arg("--version").assert_exit(0);
    assert!(out.stdout.starts_with("rivumi-mcp "), "{}", out.stdout);

    let mut make = s.shell("make").unwrap();
    make.args(["-s", "-C"])
        .arg(repo_root())
        .arg("uninstall")
        .args(&vars)
        .assert_exit(0);
    for f in files {
        assert!(!root.join(f).exists(), "{f} left behind");
    }
}
