//! Safe terminal output: one sanitising function for everything a server
//! (or any other untrusted source) can say that reaches a terminal.
//!
//! A tool result, a description, a server's stderr line or an OAuth error
//! text may carry escape sequences that recolour, retitle or clear the
//! terminal, hyperlink text to somewhere else (OSC 8), write the clipboard
//! (OSC 52), reorder what is shown (bidi overrides), or hide text that a
//! model still reads (tag characters, zero-width characters, fillers that
//! look blank, line separators). [`sanitize`] makes
//! every such character visible instead of letting the terminal act on it:
//! the escape character itself is shown as `\x1b`, so no sequence can start.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether line breaks survive sanitising.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// Keep `\n` and `\t` (multi-line text such as a tool result).
    Keep,
    /// Show `\n` and `\t` escaped too (names, one-line messages, prompts).
    Escape,
}

/// Returns `s` with controls, escape sequences, bidi controls and
/// zero-width characters made visible. Borrowed when nothing changes.
pub fn sanitize(s: &str, lines: Lines) -> Cow<'_, str> {
    if !s.chars().any(|c| needs_escape(c, lines)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !needs_escape(c, lines) {
            out.push(c);
            continue;
        }
        let _ = match c {
            '\n' => write!(out, "\\n"),
            '\t' => write!(out, "\\t"),
            '\r' => write!(out, "\\r"),
            c if (c as u32) < 0x80 => write!(out, "\\x{:02x}", c as u32),
            c if (c as u32) < 0xa0 => write!(out, "\\u{{{:x}}}", c as u32),
            c => write!(out, "<U+{:04X}>", c as u32),
        };
    }
    Cow::Owned(out)
}

/// Sanitises one line: also escapes line breaks and tabs.
pub fn line(s: &str) -> Cow<'_, str> {
    sanitize(s, Lines::Escape)
}

/// Whether `c` is escaped when sanitising text with these line rules.
pub fn needs_escape(c: char, lines: Lines) -> bool {
    match c {
        '\n' | '\t' => lines == Lines::Escape,
        // C0 controls, DEL and C1 controls (0x9b is a one-byte CSI).
        '\0'..='\x1f' | '\x7f'..='\u{9f}' => true,
        // Bidi embeddings, overrides and isolates; marks.
        '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' => true,
        '\u{2066}'..='\u{2069}' | '\u{061c}' => true,
        // Zero-width and invisible formatting characters.
        '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{feff}' => true,
        '\u{00ad}' | '\u{180e}' | '\u{034f}' => true,
        // Line and paragraph separators: some terminals and editors break
        // the line there, so text could be laid out as it is not.
        '\u{2028}' | '\u{2029}' => true,
        // Fillers that render as blank space yet are letters (Hangul
        // fillers, Khmer inherent vowels, the braille blank): used to make
        // a name or a hidden instruction look empty.
        '\u{115f}' | '\u{1160}' | '\u{3164}' | '\u{ffa0}' => true,
        '\u{17b4}' | '\u{17b5}' | '\u{2800}' => true,
        // Interlinear annotations and invisible musical formatting.
        '\u{fff9}'..='\u{fffb}' | '\u{1d173}'..='\u{1d17a}' => true,
        // Tag characters: invisible, yet they spell ASCII text that a
        // model reads (prompt smuggling).
        '\u{e0000}'..='\u{e007f}' => true,
        _ => false,
    }
}

/// Makes JSON text safe for a terminal: characters a terminal would act on
/// (DEL, C1 controls, bidi and zero-width characters; serde_json already
/// escapes C0 controls) become `\u` escapes of four hex digits. They occur
/// only inside JSON strings, so the result is the same JSON value.
pub fn json_escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| needs_escape(c, Lines::Keep)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if needs_escape(c, Lines::Keep) {
            let mut buf = [0u16; 2];
            for unit in c.encode_utf16(&mut buf) {
                let _ = write!(out, "\\u{:04x}", unit);
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Shortens `s` to at most `max` bytes on a char boundary, marking the cut.
pub fn clip(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}… [{} more bytes]", &s[..end], s.len() - end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_csi_osc_and_c1() {
        let s = "a\x1b[31mred\x1b]8;;http://x/\x07l\u{9b}2J";
        assert_eq!(
            sanitize(s, Lines::Keep),
            "a\\x1b[31mred\\x1b]8;;http://x/\\x07l\\u{9b}2J"
        );
    }

    #[test]
    fn bidi_and_zero_width_made_visible() {
        assert_eq!(line("a\u{202e}b\u{200b}c"), "a<U+202E>b<U+200B>c");
    }

    #[test]
    fn invisible_smuggling_characters_made_visible() {
        // "hi" in tag characters, then every invisible class.
        let s = "a\u{e0001}\u{e0068}\u{e0069}\u{e007f}b";
        let want = "a<U+E0001><U+E0068><U+E0069><U+E007F>b";
        assert_eq!(sanitize(s, Lines::Keep), want);
        for c in [
            '\u{e0000}',
            '\u{e007f}',
            '\u{3164}',
            '\u{115f}',
            '\u{1160}',
            '\u{ffa0}',
            '\u{200b}',
            '\u{200c}',
            '\u{200d}',
            '\u{200e}',
            '\u{200f}',
            '\u{2060}',
            '\u{2064}',
            '\u{feff}',
            '\u{2028}',
            '\u{2029}',
            '\u{2800}',
            '\u{034f}',
            '\u{fffb}',
            '\u{1d173}',
        ] {
            let shown = format!("<U+{:04X}>", c as u32);
            assert_eq!(sanitize(&c.to_string(), Lines::Keep), shown);
            assert_eq!(line(&c.to_string()), shown);
            assert!(!json_escape(&c.to_string()).contains(c));
        }
        // Their visible neighbours are left alone.
        for c in ['\u{e0080}', '\u{3163}', '\u{1161}', '\u{ffa1}', 'é', '日']
        {
            assert_eq!(line(&c.to_string()), c.to_string());
        }
    }

    #[test]
    fn newlines_kept_or_escaped() {
        assert_eq!(sanitize("a\nb\tc\r", Lines::Keep), "a\nb\tc\\r");
        assert_eq!(line("a\nb"), "a\\nb");
        assert!(matches!(line("plain é"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_escape_keeps_the_value() {
        let v = serde_json::json!({"t": "a\u{202e}b\u{9b}c\u{7f}"});
        let text = serde_json::to_string_pretty(&v).unwrap();
        let safe = json_escape(&text);
        assert!(!safe.chars().any(|c| needs_escape(c, Lines::Keep)));
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn clip_respects_char_boundaries() {
        assert_eq!(clip("héllo", 2), "h… [5 more bytes]");
        assert_eq!(clip("abc", 3), "abc");
    }
}
