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

use thiserror::Error;

/// The rule, as shown in errors.
pub const NAME_RULE: &str = "^[a-z0-9][a-z0-9-]{0,63}$ (lowercase letters, digits and '-', \
starting with a letter or digit, at most 64 characters)";

/// Member names Claude Code refuses (any case), and so does swarm.
pub const RESERVED_MEMBER_NAMES: [&str; 4] = ["main", "team-lead", "user", "system"];

/// The lead's member name in every team.
pub const LEAD_NAME: &str = "team-lead";

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
