//! `swarm send --stdin`: many messages from one process, one per line,
//! each a JSON object or a plain line for `--to`; the first failure ends
//! the stream with one error line naming its line, after what was sent.

use crate::util::{Run, Sandbox};
use std::io::Write;
use std::process::Stdio;
use swarm::team::Team;

const T: &str = "t";

fn send_stdin(sb: &Sandbox, args: &[&str], input: &str) -> Run {
    let mut all = vec!["send", "--team", T, "--stdin"];
    all.extend_from_slice(args);
    let mut child = sb
        .cmd(&all)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting swarm send");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("writing stdin");
    Run::from_output(child.wait_with_output().expect("swarm send"), &all)
}

fn texts(sb: &Sandbox, member: &str) -> Vec<(String, Option<String>)> {
    Team::new(&swarm::paths::Root::new(sb.root()), T)
        .mailbox()
        .read(member)
        .expect("inbox")
        .entries
        .into_iter()
        .map(|e| (e.text, e.summary))
        .collect()
}

#[test]
fn send_stdin_sends_one_message_per_line_plain_or_json() {
    let sb = Sandbox::new();
    sb.team_with(T, &["alice", "bob"]);
    let input = "hello alice\n\
                 {\"to\":\"bob\",\"text\":\"{not a frame}\",\"summary\":\"curly\"}\n\
                 \n\
                 {\"text\":\"second for alice\"}\n";
    let r = send_stdin(&sb, &["--to", "alice"], input);
    r.assert_code(0);
    assert_eq!(
        r.stdout
            .lines()
            .filter(|l| l.starts_with("sent to "))
            .count(),
        3,
        "{}",
        r.explain()
    );
    let alice: Vec<String> = texts(&sb, "alice").into_iter().map(|(t, _)| t).collect();
    assert_eq!(alice, ["hello alice", "second for alice"]);
    assert_eq!(
        texts(&sb, "bob"),
        [("{not a frame}".to_string(), Some("curly".to_string()))]
    );
}

#[test]
fn send_stdin_stops_at_the_first_bad_line_after_sending_the_ones_before() {
    let sb = Sandbox::new();
    sb.team_with(T, &["alice"]);
    let r = send_stdin(&sb, &["--to", "alice"], "one\n{\"txt\":\"typo\"}\nthree\n");
    r.assert_error("line 2");
    assert_eq!(r.stdout.lines().count(), 1, "{}", r.explain());
    assert_eq!(texts(&sb, "alice").len(), 1);

    let r = send_stdin(&sb, &[], "no recipient\n");
    r.assert_error("line 1: no recipient");
}

/// Issue 24, item 10: a stream stopped by a recipient off the roster
/// exited 1 (the "not found" of a command that names a member), where
/// `--stdin`'s help promises 2 for any line that stops it: the lines
/// before it were sent, the rest were not.
#[test]
fn send_stdin_stopped_by_a_recipient_off_the_roster_exits_2_as_its_help_says() {
    let sb = Sandbox::new();
    sb.team_with(T, &["alice"]);
    let r = send_stdin(
        &sb,
        &["--to", "alice"],
        "first\n{\"to\":\"nobody\",\"text\":\"x\"}\nthird\n",
    );
    r.assert_code(2);
    assert!(
        r.stderr.contains("line 2: ") && r.stderr.contains("nobody"),
        "{}",
        r.explain()
    );
    assert_eq!(r.stderr.lines().count(), 1, "one line: {}", r.explain());
    assert_eq!(texts(&sb, "alice").len(), 1, "the line before it was sent");
}

#[test]
fn send_stdin_sends_a_long_stream_in_order_each_message_once() {
    let sb = Sandbox::new();
    sb.team_with(T, &["alice", "bob"]);
    let mut input = String::new();
    for i in 0..1200 {
        let to = if i % 400 == 399 { "bob" } else { "alice" };
        input += &format!("{{\"to\":\"{to}\",\"text\":\"m{i}\"}}\n");
    }
    let r = send_stdin(&sb, &[], &input);
    r.assert_code(0);
    assert_eq!(r.stdout.lines().count(), 1200, "{}", r.explain());
    let alice: Vec<String> = texts(&sb, "alice").into_iter().map(|(t, _)| t).collect();
    let want: Vec<String> = (0..1200)
        .filter(|i| i % 400 != 399)
        .map(|i| format!("m{i}"))
        .collect();
    assert_eq!(alice, want);
    assert_eq!(texts(&sb, "bob").len(), 3);
}
