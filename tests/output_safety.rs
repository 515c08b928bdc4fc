//! What reaches the user's terminal and what survives a hostile number or
//! name: text from outside is shown escaped, never obeyed; a closed pipe
//! ends a command quietly; an absurd `.highwatermark` is quarantined, not
//! trusted; two distinct member names never share a file.

use crate::util::{Run, Sandbox};
use std::process::Stdio;

/// Retitles the terminal, then clears it.
const TITLE_AND_CLEAR: &str = "\x1b]0;TITLE\x07\x1b[2J";
/// How it must be shown.
const TITLE_AND_CLEAR_SHOWN: &str = "\\x1b]0;TITLE\\x07\\x1b[2J";

/// The characters a terminal would obey: C0 (but the newlines and tabs of
/// multi-line text), DEL, C1, bidi overrides.
fn raw_controls(s: &str) -> Vec<char> {
    s.chars()
        .filter(|c| {
            (c.is_control() && *c != '\n' && *c != '\t') || ('\u{202a}'..='\u{202e}').contains(c)
        })
        .collect()
}

fn assert_no_raw_controls(r: &Run) {
    for (what, s) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
        let raw = raw_controls(s);
        assert!(
            raw.is_empty(),
            "raw control characters {raw:?} reach the terminal on {what}\n{}",
            r.explain()
        );
    }
}

#[test]
fn inbox_shows_escape_sequences_in_a_message_escaped_not_raw() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    let text = format!("{TITLE_AND_CLEAR}hello\nsecond \u{202e}line\r");
    s.ok(&["send", "--team", "alpha", "--to", "bob", &text]);

    let r = s.ok(&["inbox", "bob", "--team", "alpha"]);
    assert_no_raw_controls(&r);
    assert!(
        r.stdout
            .contains(&format!("{TITLE_AND_CLEAR_SHOWN}hello\n")),
        "escaped, and still on several lines\n{}",
        r.explain()
    );
    assert!(
        r.stdout.contains("second \\u{202e}line\\r"),
        "{}",
        r.explain()
    );

    let json = s.ok(&["inbox", "bob", "--team", "alpha", "--json"]).json();
    assert_eq!(json[0]["text"], text.as_str(), "--json stays exact");
}

#[test]
fn task_list_and_get_show_a_hostile_subject_escaped_not_raw() {
    let s = Sandbox::new();
    s.team_with("alpha", &[]);
    let subject = format!("{TITLE_AND_CLEAR}subject\u{9b}31m");
    s.ok(&[
        "task",
        "create",
        "--team",
        "alpha",
        &subject,
        "--description",
        "line one\n\x1b[2Jline two",
    ]);
    let list = s.ok(&["task", "list", "--team", "alpha"]);
    assert_no_raw_controls(&list);
    assert!(
        list.stdout
            .contains(&format!("{TITLE_AND_CLEAR_SHOWN}subject\\u{{9b}}31m")),
        "{}",
        list.explain()
    );
    let get = s.ok(&["task", "get", "--team", "alpha", "1"]);
    assert_no_raw_controls(&get);
    assert!(
        get.stdout.contains("line one\n    \\x1b[2Jline two"),
        "{}",
        get.explain()
    );
    let json = s
        .ok(&["task", "get", "--team", "alpha", "1", "--json"])
        .json();
    assert_eq!(json["subject"], subject.as_str(), "--json stays exact");
}

#[test]
fn status_shows_a_hostile_member_name_escaped_not_raw() {
    let s = Sandbox::new();
    let name = format!("evil{TITLE_AND_CLEAR}");
    s.team_with("alpha", &[&name]);
    let r = s.ok(&["status", "--team", "alpha"]);
    assert_no_raw_controls(&r);
    assert!(
        r.stdout.contains(&format!("evil{TITLE_AND_CLEAR_SHOWN}")),
        "{}",
        r.explain()
    );
}

#[test]
fn the_sent_to_line_escapes_a_forced_hostile_name() {
    let s = Sandbox::new();
    s.team_with("alpha", &[]);
    let to = format!("x{TITLE_AND_CLEAR}");
    let r = s.ok(&["send", "--team", "alpha", "--force", "--to", &to, "hi"]);
    assert_no_raw_controls(&r);
    assert!(
        r.stdout
            .starts_with(&format!("sent to x{TITLE_AND_CLEAR_SHOWN} (")),
        "{}",
        r.explain()
    );
}

#[test]
fn an_error_that_echoes_member_names_is_escaped_not_raw() {
    let s = Sandbox::new();
    s.team_with("alpha", &[&format!("evil{TITLE_AND_CLEAR}")]);
    // The error lists the roster's members, names anyone may have written.
    let r = s.run(&["output", "--team", "alpha", "nobody"]);
    r.assert_code(1);
    assert!(r.stderr.contains("is not a member"), "{}", r.explain());
    assert_no_raw_controls(&r);
    assert!(
        r.stderr.contains(&format!("evil{TITLE_AND_CLEAR_SHOWN}")),
        "{}",
        r.explain()
    );
}

/// Runs `swarm ARGS` with stdout a pipe whose reading end is already
/// closed, the way `swarm … | head -1` ends once `head` has its line.
fn run_into_a_closed_pipe(s: &Sandbox, args: &[&str]) -> (std::process::ExitStatus, String) {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = s
        .cmd(args)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .expect("running swarm");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_ended_quietly(args: &[&str], status: std::process::ExitStatus, stderr: &str) {
    use std::os::unix::process::ExitStatusExt;
    assert!(
        status.success() || status.signal() == Some(libc::SIGPIPE),
        "swarm {args:?} into a closed pipe must exit 0 or end by SIGPIPE, got {status:?}\n\
         --- stderr ---\n{stderr}"
    );
    assert!(
        stderr.is_empty(),
        "swarm {args:?} into a closed pipe must say nothing, said:\n{stderr}"
    );
}

/// Pins 48de250: `swarm task list | head -1` panicked with exit 101 and a
/// backtrace (Rust ignores SIGPIPE, so println! met EPIPE).
#[test]
fn a_closed_pipe_ends_task_list_status_and_inbox_json_quietly_without_a_panic() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    s.ok(&["task", "create", "--team", "alpha", "one"]);
    s.ok(&["send", "--team", "alpha", "--to", "bob", "hi"]);
    for args in [
        &["task", "list", "--team", "alpha"][..],
        &["task", "list", "--team", "alpha", "--json"],
        &["status", "--team", "alpha"],
        &["inbox", "bob", "--team", "alpha", "--json"],
        &["inbox", "bob", "--team", "alpha"],
        &["team", "list"],
    ] {
        let (status, stderr) = run_into_a_closed_pipe(&s, args);
        assert_ended_quietly(args, status, &stderr);
    }
}

/// Pins a4a18c7: a `.highwatermark` of u64::MAX was trusted, and every
/// `task create` after it failed (the next id wrapped to 0).
#[test]
fn an_absurd_highwatermark_is_quarantined_and_task_create_goes_on() {
    let s = Sandbox::new();
    s.team_with("alpha", &[]);
    for subject in ["one", "two"] {
        s.ok(&["task", "create", "--team", "alpha", subject]);
    }
    let mark = s.path("tasks/alpha/.highwatermark");
    std::fs::write(&mark, b"18446744073709551615").unwrap();
    let r = s.ok(&["task", "create", "--team", "alpha", "three"]);
    assert_eq!(r.stdout.trim(), "3", "{}", r.explain());
    let copies: Vec<String> = s
        .tree()
        .into_iter()
        .filter(|p| p.starts_with("tasks/alpha/.highwatermark.corrupt-"))
        .collect();
    assert_eq!(copies.len(), 1, "copied aside: {:?}", s.tree());
    assert_eq!(
        std::fs::read(s.path(&copies[0])).unwrap(),
        b"18446744073709551615"
    );
    assert_eq!(std::fs::read_to_string(&mark).unwrap(), "2", "rebuilt");

    // And reported by the listing that finds one.
    std::fs::write(&mark, b"9007199254740992").unwrap();
    let r = s.ok(&["task", "list", "--team", "alpha"]);
    assert!(
        r.stderr.contains(".highwatermark.corrupt-"),
        "{}",
        r.explain()
    );
    let r = s.ok(&["task", "create", "--team", "alpha", "four"]);
    assert_eq!(r.stdout.trim(), "4", "{}", r.explain());
}

#[test]
fn a_task_file_numbered_past_the_id_space_does_not_stop_task_create() {
    let s = Sandbox::new();
    s.team_with("alpha", &[]);
    s.ok(&["task", "create", "--team", "alpha", "one"]);
    let one = std::fs::read(s.path("tasks/alpha/1.json")).unwrap();
    std::fs::write(s.path("tasks/alpha/18446744073709551615.json"), &one).unwrap();
    let r = s.ok(&["task", "create", "--team", "alpha", "two"]);
    assert_eq!(r.stdout.trim(), "2", "{}", r.explain());
    let r = s.ok(&["task", "list", "--team", "alpha"]);
    assert!(
        r.stderr.contains("18446744073709551615.json.corrupt-"),
        "quarantined and reported\n{}",
        r.explain()
    );
}

/// Pins 0f39034: members `a;b` and `a\nb` shared one inbox file.
#[test]
fn forced_sends_to_a_semicolon_name_and_a_newline_name_reach_two_inboxes() {
    let s = Sandbox::new();
    s.team_with("alpha", &[]);
    s.ok(&[
        "send", "--team", "alpha", "--force", "--to", "a;b", "for a;b",
    ]);
    s.ok(&[
        "send",
        "--team",
        "alpha",
        "--force",
        "--to",
        "a\nb",
        "for a-newline-b",
    ]);
    let semi = s.ok(&["inbox", "a;b", "--team", "alpha", "--json"]).json();
    let newline = s.ok(&["inbox", "a\nb", "--team", "alpha", "--json"]).json();
    let texts = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["text"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(texts(&semi), ["for a;b"], "{:?}", s.tree());
    assert_eq!(texts(&newline), ["for a-newline-b"], "{:?}", s.tree());
    assert!(
        !s.path("teams/alpha/inboxes/a-b.json").exists(),
        "{:?}",
        s.tree()
    );
}
