//! Team and member names: the strict rule for names swarm creates, and the
//! two sanitisers Claude Code applies before a name read from disk becomes a
//! path component.
//!
//! swarm only creates names matching `^[a-z0-9][a-z0-9-]{0,63}$`, for which
//! both sanitisers are the identity, so swarm's files sit exactly where
//! Claude Code looks for them. A name that came from elsewhere (a roster
//! Claude Code wrote, an inbox file name) is sanitised, never trusted: the
//! result contains only `[A-Za-z0-9_-]`, so it can be neither `.`, `..` nor
//! contain a separator, and nothing built from it escapes the state root.
//! Member files use [`member_file_stem`] instead of the lossy `S2`: the same
//! for every valid name, one-to-one for the rest.

use thiserror::Error;

/// The rule, as shown in errors.
pub const NAME_RULE: &str = "^[a-z0-9][a-z0-9-]{0,63}$ (lowercase letters, digits and '-', \
starting with a letter or digit, at most 64 characters)";

/// Member names Claude Code refuses (any case), and so does swarm.
pub const RESERVED_MEMBER_NAMES: [&str; 4] = ["main", "team-lead", "user", "system"];

/// The lead's member name in every team.
pub const LEAD_NAME: &str = "team-lead";

/// The roster name of a team's AI lead (DESIGN §12): a member whose
/// inbox gets every message addressed to [`LEAD_NAME`], and that acts on
/// the team as [`LEAD_NAME`] through `swarm mcp`.
pub const AI_LEAD_NAME: &str = "lead";

#[derive(Debug, Error, PartialEq, Eq)]
pub enum NameError {
    #[error("invalid {kind} name {shown}: names must match {NAME_RULE}")]
    Invalid { kind: &'static str, shown: String },
    #[error("{kind} name {shown} is reserved ({})", RESERVED_MEMBER_NAMES.join(", "))]
    Reserved { kind: &'static str, shown: String },
    #[error(
        "team name {shown} starts with \"session-\", which Claude Code uses for its own teams; \
         pick another name"
    )]
    ClaudeOwned { shown: String },
    #[error("{kind} name {shown} cannot be used as a file name")]
    Unusable { kind: &'static str, shown: String },
}

/// A name shown in an error: quoted, escaped, and cut to 60 characters so a
/// 10 KB name does not flood the terminal.
pub fn shown(name: &str) -> String {
    const MAX: usize = 60;
    if name.chars().count() <= MAX {
        format!("{name:?}")
    } else {
        let head: String = name.chars().take(MAX).collect();
        format!("{head:?}… ({} bytes)", name.len())
    }
}

fn matches_rule(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// Checks a team name swarm is about to create.
pub fn validate_team(name: &str) -> Result<(), NameError> {
    if !matches_rule(name) {
        return Err(NameError::Invalid {
            kind: "team",
            shown: shown(name),
        });
    }
    if name.starts_with("session-") {
        return Err(NameError::ClaudeOwned { shown: shown(name) });
    }
    Ok(())
}

/// Checks a member name swarm is about to add (the lead is added by swarm
/// itself and does not pass through here).
pub fn validate_member(name: &str) -> Result<(), NameError> {
    if !matches_rule(name) {
        return Err(NameError::Invalid {
            kind: "member",
            shown: shown(name),
        });
    }
    if RESERVED_MEMBER_NAMES
        .iter()
        .any(|r| r.eq_ignore_ascii_case(name))
    {
        return Err(NameError::Reserved {
            kind: "member",
            shown: shown(name),
        });
    }
    Ok(())
}

/// Claude Code's `S1`: every UTF-16 unit outside `[a-zA-Z0-9]` becomes `-`,
/// then lowercase. Used for the team directory that holds `config.json`.
pub fn sanitize_s1(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else {
            for _ in 0..c.len_utf16() {
                out.push('-');
            }
        }
    }
    out
}

/// Claude Code's `S2`: every UTF-16 unit outside `[a-zA-Z0-9_-]` becomes `-`,
/// case kept. Used for inbox directories, inbox files and task lists.
pub fn sanitize_s2(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('-');
            }
        }
    }
    out
}

/// The file name (stem) of a member's inbox, history, spool and output:
/// one-to-one, so two distinct names never share a file.
///
/// A name made only of `[A-Za-z0-9_-]` (every name swarm creates, every
/// member name Claude Code 2.1.328 accepts) is its own stem, exactly what
/// [`sanitize_s2`] gives and where Claude Code looks. Anything else (a name
/// forced past the roster check, `'a;b'`, `"a\nb"`) would be folded by `S2`
/// onto another name's file (both are `a-b`), so instead every byte outside
/// that set is written `%XX` (upper-case hex of its UTF-8). `%` is not in the
/// set, so an encoded stem can never equal a kept one, and percent-encoding
/// is one-to-one; [`member_from_file_stem`] reverses it. Like every
/// component, the result has no separator, is never `.` or `..`, and is
/// refused past 200 bytes.
pub fn member_file_stem(name: &str) -> Result<String, NameError> {
    let encoded = if is_s2_plain(name) {
        name.to_string()
    } else {
        let mut out = String::with_capacity(name.len() * 3);
        for &b in name.as_bytes() {
            if is_s2_byte(b) {
                out.push(char::from(b));
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    };
    component("member", name, encoded)
}

/// The member name a file stem of [`member_file_stem`] stands for, or
/// `None` for a stem that function never writes (so a listing of inbox files
/// maps each back to exactly one name).
pub fn member_from_file_stem(stem: &str) -> Option<String> {
    if is_s2_plain(stem) {
        return Some(stem.to_string());
    }
    let b = stem.as_bytes();
    let mut bytes = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            bytes.push(b[i]);
            i += 1;
        }
    }
    let name = String::from_utf8(bytes).ok()?;
    // Only the canonical spelling (upper-case hex, nothing kept encoded).
    (member_file_stem(&name).ok()? == stem).then_some(name)
}

fn is_s2_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// `S2` leaves the name as it is.
fn is_s2_plain(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(is_s2_byte)
}

/// Turns a sanitised name into a path component, refusing what no file
/// system accepts (empty, longer than 200 bytes so `.json.lock` still fits).
pub fn component(kind: &'static str, raw: &str, sanitized: String) -> Result<String, NameError> {
    if sanitized.is_empty() || sanitized.len() > 200 {
        return Err(NameError::Unusable {
            kind,
            shown: shown(raw),
        });
    }
    Ok(sanitized)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_accepts_plain_names() {
        for ok in ["a", "0", "alice", "build-bot-2", &"a".repeat(64)] {
            validate_member(ok).unwrap();
            validate_team(ok).unwrap();
        }
    }

    #[test]
    fn hostile_names_are_refused_with_the_rule_in_the_message() {
        let long = "a".repeat(10 * 1024);
        for bad in [
            "",
            "../x",
            "a/b",
            ".",
            "..",
            "a;b",
            "a\0b",
            "Alice",
            "-a",
            "a b",
            "ünï",
            "a_b",
            &long,
            &"a".repeat(65),
        ] {
            let err = validate_member(bad).unwrap_err();
            let text = err.to_string();
            assert!(text.contains("^[a-z0-9][a-z0-9-]{0,63}$"), "{text}");
            assert!(
                text.len() < 400,
                "error for a {}-byte name is {} bytes",
                bad.len(),
                text.len()
            );
            assert!(validate_team(bad).is_err());
        }
    }

    #[test]
    fn reserved_and_claude_owned_names_are_refused() {
        for r in ["main", "team-lead", "user", "system"] {
            assert!(matches!(
                validate_member(r),
                Err(NameError::Reserved { .. })
            ));
        }
        assert!(matches!(
            validate_team("session-6c171e4f"),
            Err(NameError::ClaudeOwned { .. })
        ));
    }

    #[test]
    fn two_distinct_names_never_share_a_member_file() {
        let names = [
            "a;b",
            "a\nb",
            "a b",
            "a-b",
            "a%3Bb",
            "a%3bb",
            "A-B",
            "a.b",
            "a/b",
            "ü",
            "u\u{308}",
            "-",
            "%",
            "%25",
            "team-lead",
            "Bob_2",
        ];
        let mut seen = std::collections::HashMap::new();
        for n in names {
            let stem = member_file_stem(n).unwrap();
            if let Some(other) = seen.insert(stem.clone(), n) {
                panic!("{other:?} and {n:?} both map to {stem:?}");
            }
            assert_eq!(member_from_file_stem(&stem).as_deref(), Some(n), "{stem}");
            assert!(
                stem.bytes().all(|b| is_s2_byte(b) || b == b'%'),
                "{n:?} -> {stem:?}"
            );
        }
        assert_eq!(member_file_stem("a;b").unwrap(), "a%3Bb");
        assert_eq!(member_file_stem("a\nb").unwrap(), "a%0Ab");
        assert_eq!(member_file_stem("../x").unwrap(), "%2E%2E%2Fx");
        assert!(member_file_stem("").is_err());
        assert!(member_file_stem(&"ü".repeat(40)).is_err(), "past 200 bytes");
    }

    #[test]
    fn valid_names_keep_the_file_claude_code_uses() {
        for n in ["alice", "team-lead", "Bob_2", "A", "0-x", &"a".repeat(64)] {
            assert_eq!(member_file_stem(n).unwrap(), sanitize_s2(n), "{n}");
            assert_eq!(member_file_stem(n).unwrap(), n);
        }
    }

    #[test]
    fn stems_member_file_stem_never_writes_map_to_no_name() {
        for stem in ["a%3bb", "a%2", "a%ZZb", "%41", "a.b", "", "%FF"] {
            assert_eq!(member_from_file_stem(stem), None, "{stem:?}");
        }
    }

    #[test]
    fn sanitisers_match_claude_code_and_never_leave_separators() {
        assert_eq!(sanitize_s1("My Team.1"), "my-team-1");
        assert_eq!(sanitize_s2("My_Team.1"), "My_Team-1");
        assert_eq!(sanitize_s2("../x"), "---x");
        assert_eq!(sanitize_s2(".."), "--");
        assert_eq!(sanitize_s2("a\0b"), "a-b");
        assert_eq!(
            sanitize_s1("😀"),
            "--",
            "a non-BMP char is two UTF-16 units"
        );
        for raw in ["../../etc", "/abs", "a/b", "..", ".", "ünï;$(x)"] {
            for s in [sanitize_s1(raw), sanitize_s2(raw)] {
                assert!(
                    !s.contains('/') && !s.contains('.') && !s.contains('\0'),
                    "{s}"
                );
            }
        }
        assert!(component("team", "", sanitize_s2("")).is_err());
        assert!(component("team", "x", "a".repeat(300)).is_err());
    }
}
