//! Regression tests: each names the bug it pins (the commit that fixed
//! it) and fails if that bug comes back.
//!
//! Bugs pinned by tests that live beside the behaviour they belong to:
//! each carries a doc comment naming its bug, and stays where it is.
//!
//! - 4dfa849, a key queued among coalesced wake-ups was dropped (here, and
//!   `tui_e2e::k_then_y_kills_exactly_the_selected_member_and_its_pane`).
//! - a698317, a key typed while the terminal resized waited in the tty
//!   until the next key (CI: `tui_e2e::p_then_y_prunes_only_the_idle` never
//!   saw its confirmation): here.
//! - 02e49b0 / 13a9623, Shift+Tab after a selection never reached the
//!   keymap: `tui_e2e::shift_tab_writes_mode_set_request_to_the_selected_member`.
//! - 268f902 / 13a9623, a lead whose terminal went away kept running:
//!   `tui_e2e::the_lead_exits_when_its_terminal_goes_away`.
//! - fd00ae7, the dialog woke only for inboxes:
//!   `tui_e2e::changes_made_on_the_command_line_reach_the_dialog_at_once`.
//! - 35b4904, `q` in an in-process lead ended teammates it said keep running:
//!   `tui_e2e::in_process_grid_zoom_forwards_keys_and_q_asks_before_ending_teammates`.
//! - 35f39ac, a zombie lead counted as alive, so `swarm up` started none:
//!   `lifecycle::a_restarted_lead_takes_the_team_back`.
//! - 373d49b, tmux ran `#(cmd)` from a state root's path in pipe-pane:
//!   `lifecycle::a_state_root_full_of_format_and_shell_characters_still_gets_its_output`.
//! - a19eb46, a reader saw a newly created inbox empty:
//!   `concurrency::thirty_two_processes_times_a_hundred_sends_lose_nothing_and_keep_order`.
//! - 0f39034, members `a;b` and `a\nb` shared one inbox file:
//!   `output_safety::forced_sends_to_a_semicolon_name_and_a_newline_name_reach_two_inboxes`.
//! - a4a18c7, a u64::MAX `.highwatermark` made every `task create` fail:
//!   `output_safety::an_absurd_highwatermark_is_quarantined_and_task_create_goes_on`.
//! - 48de250, `swarm task list | head -1` panicked:
//!   `output_safety::a_closed_pipe_ends_task_list_status_and_inbox_json_quietly_without_a_panic`.

use crate::util::dialog::Dialog;
use crate::util::tmux::agent;
use crate::util::{WAIT, wait_until};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use swarm::mailbox::Entry;
use swarm::paths::Root;
use swarm::tasks::NewTask;
use swarm::team::Team;

/// Wake-ups sent before the keys and after them: the keys land inside a
/// burst of at least twice this many.
const HALF_BURST: usize = 50;

/// Writers making the burst at once: half append to the lead's inbox,
/// half create tasks (the board grows, so each snapshot costs more).
const SENDERS: usize = 4;

/// A burst of wake-ups for the lead, running while a test presses keys.
struct Burst<'a> {
    d: &'a Dialog,
    sent: &'a AtomicUsize,
    failed: &'a Mutex<Option<String>>,
}

impl Burst<'_> {
    /// Waits until `more` further wake-ups have been sent (so keys pressed
    /// between two waits are spread over the burst).
    fn wait_for(&self, more: usize) {
        let until = self.sent.load(Ordering::SeqCst) + more;
        wait_until(
            &format!("{more} more wake-ups are sent"),
            WAIT,
            || self.sent.load(Ordering::SeqCst) >= until || self.failed().is_some(),
            || self.explain(),
        );
        if let Some(why) = self.failed() {
            panic!("a burst write failed: {why}");
        }
    }

    fn failed(&self) -> Option<String> {
        self.failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn explain(&self) -> String {
        format!(
            "{} wake-ups sent\n{}",
            self.sent.load(Ordering::SeqCst),
            self.d.explain()
        )
    }
}

/// Sets its flag when dropped, unwinding included.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Runs `keys` in the middle of a burst of wake-ups for the lead:
/// [`SENDERS`] writers at a time append messages from `from` to the lead's
/// inbox and create tasks (through the library, as `swarm send` and
/// `swarm task create` do, without a process each), one after another, at
/// least [`HALF_BURST`] before `keys` and as many after.
fn during_a_burst(d: &Dialog, from: &str, keys: impl FnOnce(&Burst)) {
    let sent = AtomicUsize::new(0);
    let failed = Mutex::new(None);
    let done = AtomicBool::new(false);
    let burst = Burst {
        d,
        sent: &sent,
        failed: &failed,
    };
    std::thread::scope(|s| {
        for i in 0..SENDERS {
            let (sent, failed, done) = (&sent, &failed, &done);
            s.spawn(move || {
                let team = Team::new(&Root::new(d.t.sb.root()), &d.t.team);
                while !done.load(Ordering::SeqCst) {
                    let text = format!("burst {}", sent.load(Ordering::SeqCst));
                    let wrote = if i % 2 == 0 {
                        let entry = Entry::new(from, text, None, None);
                        team.mailbox()
                            .append("team-lead", entry)
                            .map(drop)
                            .map_err(|e| e.to_string())
                    } else {
                        let task = NewTask {
                            subject: text,
                            ..NewTask::default()
                        };
                        team.tasks()
                            .create(task)
                            .map(drop)
                            .map_err(|e| e.to_string())
                    };
                    if let Err(e) = wrote {
                        *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                        return;
                    }
                    sent.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        // The senders stop however this ends: the scope joins them before
        // a failure here can propagate.
        let _stop = StopOnDrop(&done);
        burst.wait_for(HALF_BURST);
        keys(&burst);
        burst.wait_for(HALF_BURST);
    });
}

/// 4dfa849: the TeamsDialog coalesced a burst of wake-ups by draining its
/// channel, and a key queued among them was dropped: the kill and prune
/// confirmations lost their `y`. Here every key of two selections, two
/// `k`s and two `y`s is pressed during a burst.
#[test]
fn a_key_typed_during_a_wake_burst_is_not_lost() {
    let rec = agent("recorder");
    let rec = rec.as_str();
    let Some(d) = Dialog::open(
        "regression_key_in_a_wake_burst",
        "rk",
        &[("ann", &[rec]), ("bob", &[rec]), ("cat", &[rec])],
    ) else {
        return;
    };
    let panes: Vec<String> = ["ann", "cat"].iter().map(|n| d.t.pane_of(n)).collect();
    during_a_burst(&d, "bob", |burst| {
        for name in ["ann", "cat"] {
            d.select(name);
            burst.wait_for(5);
            d.keys(&["k"]);
            d.wait_screen(&format!("the kill confirmation names @{name}"), |s| {
                s.contains(&format!("Kill @{name}? y/N"))
            });
            burst.wait_for(5);
            d.keys(&["y"]);
            d.wait(
                &format!("{name} leaves the roster (the y was read)"),
                || !d.t.members().contains(&name.to_string()),
            );
        }
    });
    for p in &panes {
        d.wait(&format!("pane {p} is closed"), || {
            d.t.tmux.pane(p).is_none()
        });
    }
    assert_eq!(d.t.members(), ["bob"], "{}", d.explain());
}

/// 4dfa849 again, key by key: every character of a message typed during a
/// burst of wake-ups, one at a time across it, and the Enter that sends it
/// reach the compose box. (Run against the old drain loop put back, this
/// test lost keys in every run, "every ey of this line aries", and the kill
/// test above in two runs of five.)
#[test]
fn a_message_typed_during_a_wake_burst_arrives_whole() {
    const TEXT: &str = "every key of this line arrives";
    let rec = agent("recorder");
    let rec = rec.as_str();
    let Some(d) = Dialog::open(
        "regression_message_in_a_wake_burst",
        "rm",
        &[("ann", &[rec]), ("bob", &[rec])],
    ) else {
        return;
    };
    d.select("bob");
    d.keys(&["m"]);
    d.wait_screen("the compose box is addressed to @bob", |s| {
        s.contains("To: @bob")
    });
    during_a_burst(&d, "ann", |burst| {
        for c in TEXT.chars() {
            d.type_text(&c.to_string());
            burst.wait_for(10);
        }
        d.keys(&["Enter"]);
    });
    let from_lead = || -> Vec<String> {
        d.inbox("bob")
            .iter()
            .filter(|e| e.get("from").and_then(|f| f.as_str()) == Some("team-lead"))
            .filter_map(|e| e.get("text").and_then(|t| t.as_str()).map(str::to_string))
            .collect()
    };
    wait_until(
        "bob's inbox holds the whole message",
        WAIT,
        || from_lead().iter().any(|t| t == TEXT),
        || format!("bob got from the lead: {:?}\n{}", from_lead(), d.explain()),
    );
    let whole = from_lead().iter().filter(|t| *t == TEXT).count();
    assert_eq!(whole, 1, "the message is sent once\n{}", d.explain());
}

/// Rounds of `?` (help opens) and `Escape` (it closes) pressed while the
/// lead's terminal is resized.
const RESIZED_ROUNDS: usize = 100;

/// crossterm's default reader waits on an edge-triggered poll and, when a
/// SIGWINCH woke it in the same poll as the terminal, returned the resize
/// and dropped the terminal's readiness: the key stayed in the tty until
/// another key came (CI lost the `p` of `tui_e2e::p_then_y_prunes_only_the_idle`
/// for its whole minute). Every key here is pressed while the lead gets a
/// SIGWINCH every 2 ms, and each must show without a key after it. (With
/// the old reader a script pressing 400 keys this way lost 7; this test
/// timed out in 3 runs of 3, at rounds 9, 13 and 75.)
#[test]
fn a_key_typed_while_the_terminal_resizes_is_not_lost() {
    let Some(d) = Dialog::open("regression_key_while_resized", "rw", &[]) else {
        return;
    };
    // The lead this test's `swarm up` started: config.json's record, alive.
    let lead = d.t.wait_lead() as libc::pid_t;
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                // SAFETY: kill with a pid and a signal number has no memory
                // effects; SIGWINCH's default action is to ignore it.
                if unsafe { libc::kill(lead, libc::SIGWINCH) } != 0 {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
        let _stop = StopOnDrop(&done);
        for round in 1..=RESIZED_ROUNDS {
            d.keys(&["?"]);
            d.wait_screen(&format!("round {round}: `?` opens the help"), |s| {
                s.contains("this help")
            });
            d.keys(&["Escape"]);
            d.wait_screen(&format!("round {round}: Escape closes it"), |s| {
                !s.contains("this help")
            });
        }
    });
}
