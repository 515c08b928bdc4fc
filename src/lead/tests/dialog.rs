//! Every TeamsDialog action through the lead's [`LeadUi`], on a fake
//! configured as the backend the dialog runs on (STYLE layer 2): each test
//! asserts what the action must leave behind (the fake saw the pane's
//! kill, the roster lost the member, the task went back to the board, the
//! answer reached the teammate's inbox), so it fails when the action
//! breaks. A backend without the facet an action needs refuses it in one
//! line.

use super::Bench;
use crate::lead::Lead;
use crate::lead::control::LeadUi;
use crate::protocol::{Message, PlanApprovalRequest};
use crate::tui::{Action, LeadControl, ScreenSource};
use std::time::Duration;
use swarm_backends::BackendKind;
use swarm_backends::fake::{FakeBackend, FakeCall};

/// The dialog of `lead`, on this test's runtime.
fn dialog(lead: &Lead) -> LeadUi {
    LeadUi::new(lead, tokio::runtime::Handle::current())
}

/// How many events the lead recorded so far.
fn events_seen(lead: &Lead) -> u64 {
    lead.shared().events_seen
}

/// The outcome of an action run in the background: the first event after
/// `before` (awaited, so the test names what it waited for if it never
/// comes).
async fn outcome(lead: &Lead, before: u64, what: &str) -> String {
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if events_seen(lead) > before {
                return lead.shared().events.last().cloned().unwrap_or_default();
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("no outcome of {what}; events: {}", Bench::events(lead)))
}

/// Performs an action the dialog runs in the background, and returns its
/// outcome (the event it ends with).
async fn run(lead: &Lead, ui: &mut LeadUi, action: Action, what: &str) -> String {
    let before = events_seen(lead);
    ui.perform(action).unwrap();
    outcome(lead, before, what).await
}

/// True when the fake saw a call `is` picks.
fn saw(b: &Bench, is: impl Fn(&FakeCall) -> bool) -> bool {
    b.fake.calls().iter().any(is)
}

/// The frames in `name`'s inbox.
fn frames(b: &Bench, name: &str) -> Vec<Message> {
    b.team
        .mailbox()
        .read(name)
        .unwrap()
        .entries
        .iter()
        .filter_map(|e| e.protocol())
        .collect()
}

/// A plan approval request from `from` to the lead, as a teammate sends it.
fn plan_request(b: &Bench, from: &str, id: &str) {
    let plan = Message::PlanApprovalRequest(PlanApprovalRequest {
        from: from.into(),
        timestamp: crate::clock::now_iso(),
        plan_file_path: String::new(),
        plan_content: "1. look".into(),
        request_id: id.into(),
    });
    b.team
        .send_protocol(from, crate::names::LEAD_NAME, &plan, false)
        .unwrap();
}

#[tokio::test]
async fn k_kills_the_pane_releases_the_member_and_puts_its_task_back() {
    let b = Bench::on(FakeBackend::like(BackendKind::Tmux));
    let pane = b.spawn("alice").await;
    let task = b.task_owned_by("alice");
    let lead = b.lead();
    let mut ui = dialog(&lead);
    let before = events_seen(&lead);
    let notice = ui.perform(Action::Kill("alice".into())).unwrap();
    assert_eq!(notice.as_deref(), Some("killing @alice…"));
    let said = outcome(&lead, before, "k on alice").await;
    assert!(
        said.contains("killed @alice; 1 task(s) back on the board"),
        "{said}"
    );
    assert_eq!(b.fake.kills(), [pane], "the fake closed alice's pane");
    assert!(b.member("alice").is_none(), "alice left the roster");
    assert_eq!(b.task_owner(&task), None, "her task is back on the board");
}

#[tokio::test]
async fn s_asks_the_teammate_to_shut_down_and_kills_nothing() {
    let b = Bench::on(FakeBackend::like(BackendKind::Tmux));
    b.spawn("alice").await;
    let lead = b.lead();
    let mut ui = dialog(&lead);
    let notice = ui.perform(Action::Shutdown("alice".into())).unwrap();
    assert_eq!(notice.as_deref(), Some("asked @alice to shut down"));
    assert!(
        frames(&b, "alice")
            .iter()
            .any(|f| matches!(f, Message::ShutdownRequest(_))),
        "a shutdown_request reached alice's inbox"
    );
    assert!(lead.shared().stopping.contains_key("alice"));
    assert!(b.fake.kills().is_empty(), "a polite request kills nothing");
    assert!(b.member("alice").is_some());
}

#[tokio::test]
async fn p_prunes_the_named_teammates_and_lays_the_column_out_again() {
    let b = Bench::on(FakeBackend::like(BackendKind::Tmux));
    let ann = b.spawn("ann").await;
    let bob = b.spawn("bob").await;
    let cid = b.spawn("cid").await;
    let task = b.task_owned_by("bob");
    let lead = b.lead();
    let mut ui = dialog(&lead);
    let before = events_seen(&lead);
    let notice = ui
        .perform(Action::Prune(vec!["ann".into(), "bob".into()]))
        .unwrap();
    assert_eq!(notice.as_deref(), Some("pruning @ann @bob…"));
    let said = outcome(&lead, before, "p of ann and bob").await;
    assert!(said.contains("pruned @ann @bob"), "{said}");
    let mut closed = b.fake.kills();
    closed.sort();
    assert_eq!(closed, [ann, bob]);
    assert!(b.member("ann").is_none() && b.member("bob").is_none());
    assert!(b.fake.pane(&cid).is_some() && b.member("cid").is_some());
    assert_eq!(b.task_owner(&task), None, "bob's task is back on the board");
    assert!(
        saw(&b, |c| *c == FakeCall::Rebalance),
        "two panes closed at once: the column is laid out again"
    );
}

#[tokio::test]
async fn a_approves_and_r_rejects_with_the_answer_in_the_teammates_inbox() {
    let b = Bench::on(FakeBackend::like(BackendKind::Tmux));
    b.spawn("ann").await;
    plan_request(&b, "ann", "p-1");
    plan_request(&b, "ann", "p-2");
    let mut lead = b.lead();
    lead.refresh_requests().await.unwrap();
    let mut ui = dialog(&lead);
    let notice = ui.perform(Action::Approve("p-1".into())).unwrap();
    assert_eq!(notice.as_deref(), Some("approved plan request of @ann"));
    let notice = ui.perform(Action::Reject("p-2".into())).unwrap();
    assert!(notice.unwrap().starts_with("rejected"));
    let answers: Vec<(String, bool)> = frames(&b, "ann")
        .into_iter()
        .filter_map(|f| match f {
            Message::PlanApprovalResponse(r) => Some((r.request_id, r.approved)),
            _ => None,
        })
        .collect();
    assert_eq!(answers, [("p-1".into(), true), ("p-2".into(), false)]);
    assert!(
        lead.shared().requests.is_empty(),
        "both left the dialog's list"
    );
}

#[tokio::test]
async fn m_puts_the_message_in_the_teammates_inbox() {
    let b = Bench::on(FakeBackend::like(BackendKind::Tmux));
    b.spawn("ann").await;
    let lead = b.lead();
    let mut ui = dialog(&lead);
    let notice = ui
        .perform(Action::Send {
            to: "ann".into(),
            text: "look at the parser".into(),
        })
        .unwrap();
    assert_eq!(notice.as_deref(), Some("sent to @ann"));
    let inbox = b.team.mailbox().read("ann").unwrap().entries;
    assert!(
        inbox
            .iter()
            .any(|e| e.from == crate::names::LEAD_NAME && e.text == "look at the parser"),
        "{inbox:?}"
    );
}

#[tokio::test]
async fn t_creates_a_task_on_the_board() {
    let b = Bench::on(FakeBackend::like(BackendKind::Tmux));
    let lead = b.lead();
    let mut ui = dialog(&lead);
    let notice = ui
        .perform(Action::CreateTask {
            subject: "write the docs".into(),
        })
        .unwrap()
        .unwrap();
    let id = notice.strip_prefix("created task #").expect(&notice);
    let task = b.team.tasks().get(id).unwrap().expect("the task exists");
    assert_eq!(task.subject, "write the docs");
}

#[tokio::test]
async fn enter_focuses_the_pane_on_a_backend_with_the_focus_facet() {
    let b = Bench::on(FakeBackend::like(BackendKind::Tmux));
    let pane = b.spawn("ann").await;
    let lead = b.lead();
    let mut ui = dialog(&lead);
    let said = run(&lead, &mut ui, Action::Focus("ann".into()), "Enter on ann").await;
    assert!(said.contains("focused @ann"), "{said}");
    assert!(saw(&b, |c| *c == FakeCall::Focus(pane.clone())));
}

#[tokio::test]
async fn h_hides_and_shift_h_shows_the_pane_with_the_roster_kept_in_step() {
    let b = Bench::on(FakeBackend::like(BackendKind::Tmux));
    let pane = b.spawn("ann").await;
    let lead = b.lead();
    let mut ui = dialog(&lead);
    assert!(ui.snapshot().can_hide, "the layout facet offers h");
    let said = run(&lead, &mut ui, Action::Hide("ann".into()), "h on ann").await;
    assert!(said.contains("hid @ann"), "{said}");
    assert!(b.fake.pane(&pane).unwrap().hidden);
    assert!(b.member("ann").unwrap().hidden(), "the roster says hidden");
    let said = run(&lead, &mut ui, Action::ShowAll, "H").await;
    assert!(said.contains("showing every pane"), "{said}");
    assert!(!b.fake.pane(&pane).unwrap().hidden);
    assert!(!b.member("ann").unwrap().hidden());
    let moves: Vec<_> = b
        .fake
        .calls()
        .into_iter()
        .filter(|c| matches!(c, FakeCall::Hide(_) | FakeCall::Show(_)))
        .collect();
    assert_eq!(moves, [FakeCall::Hide(pane.clone()), FakeCall::Show(pane)]);
}

#[tokio::test]
async fn without_the_layout_facet_h_is_refused_in_one_line_and_nothing_moves() {
    // iTerm2 can focus a pane but not hide one.
    let b = Bench::on(FakeBackend::like(BackendKind::ITerm2));
    b.spawn("ann").await;
    let lead = b.lead();
    let mut ui = dialog(&lead);
    assert!(!ui.snapshot().can_hide, "the dialog does not offer h");
    let said = run(&lead, &mut ui, Action::Hide("ann".into()), "h on ann").await;
    assert!(
        said.ends_with("error: the iterm2 backend does not support hiding panes"),
        "{said}"
    );
    assert!(
        !b.member("ann").unwrap().hidden(),
        "the roster is unchanged"
    );
    assert!(!saw(&b, |c| matches!(c, FakeCall::Hide(_))));
}

#[tokio::test]
async fn without_the_focus_facet_enter_is_refused_in_one_line() {
    let b = Bench::on(FakeBackend::like(BackendKind::WindowsTerminal));
    b.spawn("ann").await;
    let lead = b.lead();
    let mut ui = dialog(&lead);
    let said = run(&lead, &mut ui, Action::Focus("ann".into()), "Enter on ann").await;
    assert!(
        said.ends_with("error: the windows-terminal backend does not support focusing a pane"),
        "{said}"
    );
    assert!(!saw(&b, |c| matches!(c, FakeCall::Focus(_))));
}

#[tokio::test]
async fn with_live_screens_the_dialog_zooms_and_keys_and_sizes_reach_the_pane() {
    let b = Bench::on(FakeBackend::like(BackendKind::InProcess));
    let pane = b.spawn("ann").await;
    b.fake.set_screen(&pane, "ann's prompt>");
    let lead = b.lead();
    let mut ui = dialog(&lead);
    assert!(ui.snapshot().in_process, "the dialog draws the screens");
    assert_eq!(ui.perform(Action::Focus("ann".into())).unwrap(), None);
    ui.perform(Action::Input {
        to: "ann".into(),
        bytes: b"ls\r".to_vec(),
    })
    .unwrap();
    ui.perform(Action::ResizePane {
        name: "ann".into(),
        rows: 12,
        cols: 50,
    })
    .unwrap();
    let calls = b.fake.calls();
    assert!(
        !calls.iter().any(|c| matches!(c, FakeCall::Focus(_))),
        "Enter zooms in the dialog, it focuses no pane"
    );
    assert!(calls.contains(&FakeCall::Input(pane.clone(), b"ls\r".to_vec())));
    assert!(calls.contains(&FakeCall::Resize {
        pane: pane.clone(),
        rows: 12,
        cols: 50
    }));
    let mut shown = String::new();
    assert!(ui.with_screen("ann", &mut |s| shown = s.contents()));
    assert_eq!(shown, "ann's prompt>");
}
