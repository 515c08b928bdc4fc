//! Text from outside (messages, summaries, task subjects, member and team
//! names, error messages that echo them) made safe to show on a terminal.
//!
//! Anything a teammate, a file or a command line supplied can hold bytes a
//! terminal obeys: `\x1b]0;TITLE\x07` retitles the window, `\x1b[2J` clears
//! it, a bare `\r` overwrites the line it is on, a C1 `\u{9b}` starts a
//! control sequence on terminals that honour 8-bit controls, and a bidi
//! override (`\u{202e}`) makes the text after it read backwards. Every
//! human-readable output (the commands, the TUI, `main`'s error line) shows
//! such characters escaped, never raw, through the two functions here.
//! Machine output (`--json`) is left exact: serde escapes it.

use std::borrow::Cow;
use std::fmt::Write as _;

/// For one line (a name, a subject, a table cell, an error): every control
/// character (C0 including `\n`, `\r` and `\t`, DEL, C1) and every bidi
/// control is shown escaped (`\n`, `\x1b`, `\u{9b}`, `\u{202e}`).
pub fn escape_line(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// For text shown as several lines (a message body, a description): like
/// [`escape_line`], but `\n` and `\t` are kept as they are.
pub fn escape_text(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

/// `s` as one word of a POSIX shell command the user copies (`'it'\''s'`;
/// plain words as they are), then, like everything shown, through
/// [`escape_line`]: a control character is shown escaped, never obeyed
/// (such a word cannot be copied as it is; it is not run either).
pub fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        return s.to_owned();
    }
    let quoted = format!("'{}'", s.replace('\'', "'\\''"));
    escape_line(&quoted).into_owned()
}

/// `n` and a noun, the noun plural unless `n` is 1: "1 file", "3 files".
/// (For nouns whose plural is the noun and an `s`.)
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn escape(s: &str, multi_line: bool) -> Cow<'_, str> {
    let keep = |c: char| multi_line && (c == '\n' || c == '\t');
    let unsafe_char = |c: char| (c.is_control() || is_bidi_control(c)) && !keep(c);
    // Printable ASCII is the common case, and a byte test is enough for it.
    if s.bytes().all(|b| (0x20..0x7f).contains(&b)) || !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !unsafe_char(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// The invisible characters that reorder the text around them: the Arabic
/// letter mark, the left-to-right and right-to-left marks, the embeddings
/// and overrides (U+202A–U+202E) and the isolates (U+2066–U+2069).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_word_is_quoted_for_a_shell_and_escaped_for_the_terminal() {
        assert_eq!(shell_word("/usr/local/bin/swarm"), "/usr/local/bin/swarm");
        assert_eq!(shell_word("/tmp/my dir/swarm"), "'/tmp/my dir/swarm'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("a;b $(x)"), "'a;b $(x)'");
        // Never a raw control character on the terminal.
        assert_eq!(
            shell_word("/tmp/\x1b]0;pwned\x07"),
            "'/tmp/\\x1b]0;pwned\\x07'"
        );
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for s in ["", "alice", "fix the build: ünï 😀 \\x1b", "a\\nb"] {
            assert!(matches!(escape_line(s), Cow::Borrowed(b) if b == s));
            assert!(matches!(escape_text(s), Cow::Borrowed(b) if b == s));
        }
        assert!(matches!(
            escape_text("two\nlines\tand a tab"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_title_and_clear_sequence_is_shown_not_obeyed() {
        let hostile = "\x1b]0;TITLE\x07\x1b[2Jhi";
        assert_eq!(escape_line(hostile), "\\x1b]0;TITLE\\x07\\x1b[2Jhi");
        assert_eq!(escape_text(hostile), "\\x1b]0;TITLE\\x07\\x1b[2Jhi");
    }

    #[test]
    fn every_c0_del_c1_and_bidi_control_is_escaped() {
        for c in (0u32..0x20).chain(0x7f..0xa0).filter_map(char::from_u32) {
            let s = c.to_string();
            let shown = escape_line(&s);
            assert!(
                shown.starts_with('\\') && !shown.chars().any(char::is_control),
                "{c:?} shown as {shown:?}"
            );
        }
        assert_eq!(escape_line("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(escape_line("\x7f"), "\\x7f");
        assert_eq!(escape_line("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(escape_line("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
        assert_eq!(escape_line("\u{200f}"), "\\u{200f}");
    }

    #[test]
    fn one_line_escapes_newlines_and_tabs_text_keeps_them() {
        assert_eq!(escape_line("a\nb\tc\rd"), "a\\nb\\tc\\rd");
        assert_eq!(escape_text("a\nb\tc\rd"), "a\nb\tc\\rd");
    }
}
