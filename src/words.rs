//! Splitting a command line the operator typed (`--stdio`,
//! `--pre-tool-hook`, `--sampling-command` and their environment
//! variables) into an argv, as POSIX `sh` splits words — without a shell:
//! nothing is expanded, substituted, globbed or redirected.
//!
//! The rules are those of the Shell Command Language (XCU 2.2–2.3) for
//! quoting and word boundaries, and nothing else:
//! - words are separated by ASCII blanks only: space, tab and newline
//!   (any other character, Unicode spaces included, belongs to a word);
//! - a backslash outside quotes keeps the next character literal
//!   (backslash-newline is removed);
//! - single quotes keep everything literal up to the next single quote;
//! - inside double quotes a backslash escapes only `$`, `` ` ``, `"`, `\`
//!   and newline; before any other character it stays a backslash.
//!
//! `$`, `` ` ``, `*`, `;`, `|` and the other characters a shell would act
//! on are ordinary characters here: no shell runs.

/// Splits `s` into words; an unterminated quote, a trailing backslash or
/// a line with no word is an error.
pub(crate) fn split_command(s: &str) -> Result<Vec<String>, String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\\' => match chars.next() {
                None => return Err("trailing backslash".to_string()),
                // A line continuation: nothing, and no word boundary.
                Some('\n') => {}
                Some(n) => {
                    cur.push(n);
                    in_word = true;
                }
            },
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        None => return Err("unterminated quote".to_string()),
                        Some('\'') => break,
                        Some(q) => cur.push(q),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        None => return Err("unterminated quote".to_string()),
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            None => {
                                return Err("unterminated quote".to_string());
                            }
                            Some('\n') => {}
                            Some(e @ ('$' | '`' | '"' | '\\')) => cur.push(e),
                            Some(other) => {
                                cur.push('\\');
                                cur.push(other);
                            }
                        },
                        Some(q) => cur.push(q),
                    }
                }
            }
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    if out.is_empty() {
        return Err("empty command".to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::split_command;

    fn ok(s: &str) -> Vec<String> {
        split_command(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    #[test]
    fn words_and_plain_quotes() {
        assert_eq!(ok("a b  c"), ["a", "b", "c"]);
        assert_eq!(
            ok(r#"sh -c 'echo $HOME; exit 2' "x y" z\ w"#),
            ["sh", "-c", "echo $HOME; exit 2", "x y", "z w"]
        );
        assert_eq!(ok("  lead\ttab\nnl  "), ["lead", "tab", "nl"]);
        assert_eq!(ok(r#"a""b '' """#), ["ab", "", ""]);
        assert_eq!(ok(r#"pre"mid"'post'"#), ["premidpost"]);
    }

    #[test]
    fn only_ascii_blanks_separate_words() {
        // NO-BREAK SPACE, EM SPACE, IDEOGRAPHIC SPACE, LINE SEPARATOR,
        // vertical tab, form feed and carriage return are word characters
        // to sh (its blanks are space and tab; newline ends a command).
        for c in [
            '\u{a0}', '\u{2003}', '\u{3000}', '\u{2028}', '\x0b', '\x0c', '\r',
        ] {
            assert_eq!(
                ok(&format!("a{c}b c")),
                [format!("a{c}b"), "c".into()]
            );
        }
    }

    #[test]
    fn backslash_inside_double_quotes_is_posix() {
        // Only $ ` " \ and newline are escaped; before anything else the
        // backslash stays.
        assert_eq!(ok(r#""a\b""#), [r"a\b"]);
        assert_eq!(ok(r#""C:\Program Files\x""#), [r"C:\Program Files\x"]);
        assert_eq!(ok(r#""\n\t""#), [r"\n\t"]);
        assert_eq!(ok(r#""a\"b""#), [r#"a"b"#]);
        assert_eq!(ok(r#""a\\b""#), [r"a\b"]);
        assert_eq!(ok(r#""a\$b""#), ["a$b"]);
        assert_eq!(ok(r#""a\`b""#), ["a`b"]);
        assert_eq!(ok("\"a\\\nb\""), ["ab"]);
    }

    #[test]
    fn backslash_outside_quotes_and_in_single_quotes() {
        assert_eq!(ok(r"a\b"), ["ab"]);
        assert_eq!(ok(r"a\\b"), [r"a\b"]);
        assert_eq!(ok(r"a\ b"), ["a b"]);
        assert_eq!(ok(r"\'x"), ["'x"]);
        assert_eq!(ok("a\\\nb"), ["ab"]);
        assert_eq!(ok(r"'a\b' 'c\'"), [r"a\b", r"c\"]);
        assert_eq!(ok(r"'a\\b'"), [r"a\\b"]);
    }

    #[test]
    fn nothing_is_expanded() {
        assert_eq!(ok("echo $HOME `id` *"), ["echo", "$HOME", "`id`", "*"]);
        assert_eq!(ok("a;b|c"), ["a;b|c"]);
    }

    #[test]
    fn what_sh_would_not_finish_is_refused() {
        for bad in ["'open", "\"open", "\"a\\", "trail\\", "", "  ", "\t\n"] {
            assert!(split_command(bad).is_err(), "{bad:?}");
        }
    }
}
