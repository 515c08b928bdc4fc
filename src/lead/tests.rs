//! The lead's logic against the recording fake backend (STYLE layer 2): no
//! processes, no tmux; every pane operation the lead makes is on the
//! fake's call list, and the fake scripts exits, vanishings, stubborn
//! panes and pane ids reused by panes swarm did not start. `dialog` runs
//! every TeamsDialog action, `up_down` brings a team up and down, each on
//! a fake configured as the backend it stands in for.

mod dialog;
mod up_down;

use super::{Lead, Seen};
use crate::ops::spawn::{SpawnRequest, spawn_member, spawn_members};
use crate::ops::{depart as teardown, recover};
use crate::paths::Root;
use crate::session::{Session, member_pane};
use crate::tasks::NewTask;
use crate::team::{Roster, SwarmField, Team};
use std::sync::Arc;
use std::time::Duration;
use swarm_backends::fake::{FakeBackend, FakeCall, FakeSignal};
use swarm_backends::{PaneBackendExecutor, PaneId, PaneMark, PaneStatus, SpawnSpec};

struct Bench {
    _dir: tempfile::TempDir,
    team: Team,
    fake: Arc<FakeBackend>,
}

impl Bench {
    /// A team on the bare fake: in-process, no facets.
    fn new() -> Self {
        Self::on(FakeBackend::new())
    }

    /// A team on `fake`.
    fn on(fake: FakeBackend) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path().join("root"));
        let cwd = dir.path().to_string_lossy().into_owned();
        Roster::new(&root, "t").create(None, &cwd).unwrap();
        Bench {
            team: Team::new(&root, "t"),
            _dir: dir,
            fake: Arc::new(fake),
        }
    }

    fn opened(&self) -> Session {
        Session::with_backend(
            &self.team.root,
            &self.team.name,
            self.fake.clone() as Arc<dyn PaneBackendExecutor>,
        )
    }

    /// The team's verbs as the lead acts on them, on the fake backend.
    fn ops(&self) -> crate::ops::TeamOps {
        crate::ops::TeamOps::as_lead(self.team.clone(), std::sync::Arc::new(self.opened()))
    }

    fn lead(&self) -> Lead {
        Lead::new(self.team.clone(), self.opened())
    }

    fn request(&self, name: &str) -> SpawnRequest {
        SpawnRequest {
            name: name.to_string(),
            cwd: self._dir.path().to_path_buf(),
            ..SpawnRequest::default()
        }
    }

    async fn spawn(&self, name: &str) -> PaneId {
        let opened = self.opened();
        spawn_member(&self.team, &opened, &self.request(name))
            .await
            .unwrap()
            .pane
            .id
    }

    fn member(&self, name: &str) -> Option<crate::team::Member> {
        self.team.roster().read().unwrap().member(name).cloned()
    }

    fn task_owned_by(&self, owner: &str) -> String {
        let t = self
            .team
            .tasks()
            .create(NewTask {
                subject: format!("work of {owner}"),
                description: String::new(),
                active_form: None,
                blocked_by: Vec::new(),
                metadata: None,
            })
            .unwrap();
        self.team.tasks().claim(Some(&t.id), owner, false).unwrap();
        t.id
    }

    fn task_owner(&self, id: &str) -> Option<String> {
        self.team.tasks().get(id).unwrap().and_then(|t| t.owner)
    }

    fn events(lead: &Lead) -> String {
        lead.shared().events.join("\n")
    }
}

/// A file operation cancelled as the lead ends is reported as cancelled,
/// never as a panic (the lead's log is read for "panic" by people and by
/// `pane_safety`); a real panic still says so.
#[tokio::test]
async fn a_file_operation_cancelled_at_the_end_is_not_called_a_panic() {
    let cancelled = tokio::task::spawn(std::future::pending::<anyhow::Result<()>>());
    cancelled.abort();
    let err = format!("{:#}", super::settled(cancelled.await).unwrap_err());
    assert!(!err.contains("panic"), "{err}");
    assert!(err.contains("cancelled"), "{err}");
    let panicked = tokio::task::spawn_blocking(|| -> anyhow::Result<()> { panic!("boom") });
    let err = format!("{:#}", super::settled(panicked.await).unwrap_err());
    assert!(err.contains("panicked"), "{err}");
    assert_eq!(super::settled(Ok(Ok(7))).unwrap(), 7);
}

#[tokio::test]
async fn a_spawned_pane_is_marked_with_the_nonce_on_the_roster() {
    let b = Bench::new();
    let pane = b.spawn("alice").await;
    let m = b.member("alice").unwrap();
    let spec = b.fake.spec(&pane).unwrap();
    assert_eq!(spec.mark.team, "t");
    assert_eq!(spec.mark.member, "alice");
    assert_eq!(
        m.swarm_field(SwarmField::Nonce).and_then(|v| v.as_str()),
        Some(spec.mark.nonce.as_str()),
        "the roster holds the nonce the pane carries"
    );
    assert_eq!(m.tmux_pane_id, pane.as_str());
    // Every pane's program waits for the backend's ready file.
    assert_eq!(spec.args[0], "pane-exec");
    assert!(
        spec.ready_file.as_ref().unwrap().exists(),
        "the fake signalled ready"
    );
}

#[tokio::test]
async fn down_asks_every_teammate_once_a_few_at_a_time() {
    let b = Bench::new();
    let names: Vec<String> = (0..11).map(|i| format!("m{i}")).collect();
    for n in &names {
        b.spawn(n).await;
    }
    let members: Vec<_> = names.iter().map(|n| b.member(n).unwrap()).collect();
    let asked = teardown::ask_all(&b.team, members).unwrap();
    assert_eq!(asked.len(), names.len());
    for (a, n) in asked.iter().zip(&names) {
        assert_eq!(&a.member.name, n, "in the order asked");
        let requests: Vec<String> = b
            .team
            .mailbox()
            .read(n)
            .unwrap()
            .entries
            .iter()
            .filter_map(|e| match e.protocol() {
                Some(crate::protocol::Message::ShutdownRequest(r)) => Some(r.request_id),
                _ => None,
            })
            .collect();
        assert_eq!(requests, vec![a.request.clone()], "{n}'s inbox");
    }
}

#[tokio::test]
async fn a_stubborn_pane_gets_the_whole_ladder_and_its_tasks_go_back() {
    let b = Bench::new();
    let pane = b.spawn("stubborn").await;
    b.fake.set_stubborn(&pane, true);
    let task = b.task_owned_by("stubborn");
    let r = b
        .ops()
        .kill("stubborn", Duration::from_millis(20))
        .await
        .unwrap();
    assert_eq!(b.fake.signals(&pane), [FakeSignal::Term, FakeSignal::Kill]);
    assert!(b.fake.pane(&pane).is_none(), "the pane is closed");
    assert!(b.member("stubborn").is_none(), "released from the roster");
    assert_eq!(r.returned_tasks.len(), 1);
    assert_eq!(b.task_owner(&task), None);
}

#[tokio::test]
async fn a_pane_id_reused_by_a_foreign_pane_is_never_killed() {
    let b = Bench::new();
    let pane = b.spawn("alice").await;
    let task = b.task_owned_by("alice");
    let mut lead = b.lead();
    lead.supervise().await.unwrap();
    assert_eq!(lead.shared().seen.get("alice"), Some(&Seen::Running));
    // The server restarted and the id now names the user's own program.
    b.fake.make_foreign(&pane);
    lead.supervise().await.unwrap();
    assert!(
        !b.fake
            .calls()
            .iter()
            .any(|c| matches!(c, FakeCall::Kill { .. } | FakeCall::Close(_))),
        "the lead never touches a pane without the mark: {:?}",
        b.fake.calls()
    );
    assert!(b.fake.pane(&pane).is_some(), "the user's pane lives");
    let m = b.member("alice").unwrap();
    assert_eq!(m.tmux_pane_id, "", "the lost pane id is forgotten");
    assert!(m.swarm_field(SwarmField::Exit).is_some());
    assert_eq!(b.task_owner(&task), None, "its task went back to the board");
    assert!(
        Bench::events(&lead).contains(&format!("pane {pane} no longer belongs to alice")),
        "{}",
        Bench::events(&lead)
    );
    // And a kill of a member whose recorded pane is foreign leaves it too.
    let bob = b.spawn("bob").await;
    b.fake.make_foreign(&bob);
    let r = b
        .ops()
        .kill("bob", Duration::from_millis(10))
        .await
        .unwrap();
    assert_eq!(r.pane_not_ours.as_deref(), Some(bob.as_str()));
    assert!(
        b.fake.pane(&bob).is_some(),
        "still alive: {:?}",
        b.fake.kills()
    );
    assert!(b.member("bob").is_none());
}

#[tokio::test]
async fn concurrent_spawns_of_one_name_give_one_pane_and_one_clear_error() {
    let b = Arc::new(Bench::new());
    let mut handles = Vec::new();
    for _ in 0..2 {
        let b = b.clone();
        handles.push(tokio::spawn(async move {
            let opened = b.opened();
            spawn_member(&b.team, &opened, &b.request("twin")).await
        }));
    }
    let mut ok = 0;
    let mut errors = Vec::new();
    for h in handles {
        match h.await.unwrap() {
            Ok(_) => ok += 1,
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    assert_eq!(ok, 1, "exactly one spawn wins: {errors:?}");
    assert!(
        errors[0].contains("twin is already running in pane"),
        "{errors:?}"
    );
    assert_eq!(b.fake.live().len(), 1, "one pane for one name");
    let members: Vec<String> = b
        .team
        .roster()
        .read()
        .unwrap()
        .teammates()
        .map(|m| m.name.clone())
        .collect();
    assert_eq!(members, ["twin"]);
}

#[tokio::test]
async fn a_restarted_lead_adopts_marked_panes_only() {
    let b = Bench::new();
    let a = b.spawn("alice").await;
    let c = b.spawn("carol").await;
    // The lead restarts: a fresh supervisor over the same backend. Carol's
    // id meanwhile names a pane swarm did not start.
    b.fake.make_foreign(&c);
    let mut lead = b.lead();
    lead.supervise().await.unwrap();
    assert_eq!(lead.shared().seen.get("alice"), Some(&Seen::Running));
    assert_eq!(lead.shared().seen.get("carol"), Some(&Seen::Lost));
    assert!(Bench::events(&lead).contains(&format!("alice is running in pane {a}")));
    assert!(b.fake.pane(&c).is_some());
    assert!(b.fake.kills().is_empty(), "{:?}", b.fake.kills());
}

#[tokio::test]
async fn a_death_that_could_not_be_recorded_is_recorded_on_the_next_check() {
    let b = Bench::new();
    let pane = b.spawn("alice").await;
    let task = b.task_owned_by("alice");
    let mut lead = b.lead();
    lead.supervise().await.unwrap();
    b.fake.exit(&pane, Some(3));
    lead.fail_records = 1;
    let err = lead.supervise().await.unwrap_err();
    assert!(format!("{err:#}").contains("no space left"), "{err:#}");
    assert_eq!(b.task_owner(&task).as_deref(), Some("alice"), "not yet");
    // The disk has room again: the next check records it.
    lead.supervise().await.unwrap();
    let m = b.member("alice").unwrap();
    assert_eq!(
        m.swarm_field(SwarmField::Exit)
            .and_then(|e| e.get("code").cloned()),
        Some(serde_json::json!(3))
    );
    assert_eq!(b.task_owner(&task), None, "the dead owner's task is back");
    assert!(b.fake.pane(&pane).is_none(), "the dead pane was closed");
    assert!(Bench::events(&lead).contains("alice is dead: exited with code 3"));
}

#[tokio::test]
async fn an_up_killed_mid_spawn_is_completed_by_the_next_up() {
    let b = Bench::new();
    // The interrupted `up` reserved three members (nonces on the roster),
    // opened alice's pane, and died before recording it; bob never got a
    // pane; a stray pane of carol's (an old nonce) nobody tracks.
    let mut reserved = Vec::new();
    for name in ["alice", "bob", "carol"] {
        let mut m = crate::team::Member::teammate("t", name, "blue", "/");
        m.backend_type = Some("in-process".into());
        m.set_swarm_field(
            SwarmField::Nonce,
            serde_json::Value::String(format!("{name}0nonce")),
        );
        reserved.push(m);
    }
    b.team.roster().add_members(reserved).unwrap();
    let spec = |name: &str, nonce: &str| {
        SpawnSpec::new("x", Vec::<String>::new(), std::env::temp_dir()).mark(PaneMark {
            team: "t".into(),
            member: name.into(),
            nonce: nonce.into(),
        })
    };
    let alice = b.fake.spawn(&spec("alice", "alice0nonce")).await.unwrap();
    let stray = b.fake.spawn(&spec("carol", "stale0nonce")).await.unwrap();
    let other_team = b
        .fake
        .spawn(&spec("bob", "bob0nonce").mark(PaneMark {
            team: "other".into(),
            member: "bob".into(),
            nonce: "bob0nonce".into(),
        }))
        .await
        .unwrap();
    let opened = b.opened();
    let done = recover::reconcile(&b.team, &opened).await.unwrap();
    assert_eq!(done.adopted, [format!("alice (pane {})", alice.id)]);
    assert_eq!(done.closed, [format!("pane {} of carol", stray.id)]);
    assert!(
        b.fake.pane(&stray).is_none(),
        "the untracked duplicate is closed"
    );
    assert!(
        b.fake.pane(&other_team).is_some(),
        "another team's pane is not looked at"
    );
    assert_eq!(b.member("alice").unwrap().tmux_pane_id, alice.id.as_str());
    // What is still without a pane is spawned (as `up` does next).
    let missing: Vec<SpawnRequest> = ["bob", "carol"].iter().map(|n| b.request(n)).collect();
    let opened = b.opened();
    spawn_members(&b.team, &opened, &missing).await.unwrap();
    for name in ["alice", "bob", "carol"] {
        let m = b.member(name).unwrap();
        let pane = member_pane(&m).expect("a pane");
        let st = b.fake.status(std::slice::from_ref(&pane)).await.unwrap();
        assert!(
            matches!(st[0].1, PaneStatus::Running { .. }),
            "{name}: {st:?}"
        );
    }
    assert_eq!(
        b.fake.live().len(),
        4,
        "alice, bob, carol and the other team's"
    );
}

#[tokio::test]
async fn a_roster_that_lost_its_members_recovers_them_from_the_marks() {
    let b = Bench::new();
    let pane = b.spawn("alice").await;
    // config.json was rebuilt: only the lead is left.
    b.team.roster().remove_member("alice").unwrap();
    let done = recover::reconcile(&b.team, &b.opened()).await.unwrap();
    assert_eq!(done.recovered, [format!("alice (pane {pane})")]);
    let m = b.member("alice").unwrap();
    assert_eq!(m.tmux_pane_id, pane.as_str());
    assert!(member_pane(&m).is_some());
    // Nothing without a pane is left to spawn: no second copy.
    assert!(
        b.team
            .roster()
            .read()
            .unwrap()
            .teammates()
            .all(|m| !m.tmux_pane_id.is_empty())
    );
}

/// The dialog is rung once per snapshot: the writes of one change (a task
/// file, a message, its consumption) each woke the dialog's thread.
#[tokio::test]
async fn changes_before_a_snapshot_ring_the_dialog_once_and_after_it_again() {
    use crate::tui::LeadControl;
    let b = Bench::new();
    let mut lead = b.lead();
    let (wake, rings) = super::wake::Wake::channel();
    lead.wake = Some(wake);
    let mut ui = super::control::LeadUi::new(&lead, tokio::runtime::Handle::current());
    lead.changed();
    lead.changed();
    assert_eq!(rings.try_iter().count(), 1, "two changes, one ring");
    ui.snapshot();
    lead.changed();
    assert_eq!(
        rings.try_iter().count(),
        1,
        "a change after the snapshot rings again"
    );
}

/// Only a change to the lead's own inbox (or one the watcher cannot name)
/// makes the supervisor read it; another inbox, the roster or the board
/// only refresh the view.
#[test]
fn only_the_leads_inbox_makes_the_supervisor_read_it() {
    use crate::mailbox::Changes;
    use std::ffi::{OsStr, OsString};
    let files =
        |names: &[&str]| Changes::Files(names.iter().map(|n| (0, OsString::from(n))).collect());
    let lead = Some(OsStr::new("team-lead.json"));
    assert_eq!(
        super::watch::woken_by(&files(&["bob.json"]), lead),
        super::watch::Woke::Shown
    );
    assert_eq!(
        super::watch::woken_by(&files(&["bob.json", "team-lead.json"]), lead),
        super::watch::Woke::LeadInbox
    );
    assert_eq!(
        super::watch::woken_by(&Changes::All, lead),
        super::watch::Woke::LeadInbox
    );
    assert_eq!(
        super::watch::woken_by(&files(&["team-lead.json"]), None),
        super::watch::Woke::Shown,
        "a file of that name in another directory"
    );
}

/// Issue 24, item 2: the lead recorded a teammate's exit 3, closed its dead
/// pane, and on its next look took the pane's going for a second death
/// ("its pane disappeared", exit unknown) and overwrote the record.
#[tokio::test]
async fn a_death_on_record_is_not_recorded_again() {
    let b = Bench::new();
    let pane = b.spawn("quitter").await;
    let mut lead = b.lead();
    lead.supervise().await.unwrap();
    b.fake.exit(&pane, Some(3));
    lead.supervise().await.unwrap();
    let exit = |b: &Bench| b.member("quitter").unwrap().exit().unwrap().unwrap();
    assert_eq!(exit(&b).code, Some(3));
    assert!(b.fake.pane(&pane).is_none(), "the dead pane was closed");
    lead.supervise().await.unwrap();
    lead.supervise().await.unwrap();
    assert_eq!(exit(&b).code, Some(3), "{}", Bench::events(&lead));
    assert!(
        !Bench::events(&lead).contains("its pane disappeared"),
        "{}",
        Bench::events(&lead)
    );
}

#[tokio::test]
async fn a_request_answered_elsewhere_is_said_with_who_answered_it() {
    use crate::ops::requests::{Answerer, answer};
    use crate::protocol::{Message, PlanApprovalRequest};
    let b = Bench::new();
    b.team
        .roster()
        .add_member(crate::team::Member::teammate("t", "ann", "blue", "/"))
        .unwrap();
    let ask = |id: &str| {
        let plan = Message::PlanApprovalRequest(PlanApprovalRequest {
            from: "ann".into(),
            timestamp: crate::clock::now_iso(),
            plan_file_path: String::new(),
            plan_content: "1. look".into(),
            request_id: id.into(),
        });
        b.team
            .send_protocol("ann", crate::names::LEAD_NAME, &plan, false)
            .unwrap();
    };
    ask("p-1");
    ask("p-2");
    let mut lead = b.lead();
    lead.refresh_requests().await.unwrap();
    assert_eq!(lead.shared().requests.len(), 2);
    answer(&b.team, "p-1", true, None, Answerer::AiLead).unwrap();
    lead.refresh_requests().await.unwrap();
    assert_eq!(lead.shared().requests.len(), 1);
    assert!(
        Bench::events(&lead).contains("the AI lead approved ann's plan"),
        "{}",
        Bench::events(&lead)
    );
    answer(&b.team, "p-2", false, None, Answerer::User).unwrap();
    lead.refresh_requests().await.unwrap();
    assert!(
        Bench::events(&lead).contains("you rejected ann's plan"),
        "{}",
        Bench::events(&lead)
    );
}

/// The lead releases a teammate on its shutdown approval from what it
/// read of it then; by the time it writes, `swarm shutdown` may have
/// released it and a message brought it back (same name, a new pane). That
/// teammate stays: on the roster, its pane open, its task its own.
#[tokio::test]
async fn a_teammate_back_in_a_new_pane_is_not_released_by_its_old_approval() {
    let b = Bench::new();
    b.spawn("keeper").await;
    let was = b.member("keeper").unwrap();
    b.ops()
        .kill("keeper", Duration::from_millis(20))
        .await
        .unwrap();
    let pane = b.spawn("keeper").await;
    let task = b.task_owned_by("keeper");
    let left = b.ops().depart_approved(&[was]).await.unwrap();
    assert_eq!(left.len(), 1);
    assert!(left[0].returned_tasks.is_empty(), "{:?}", left[0]);
    let m = b.member("keeper").expect("keeper is still on the roster");
    assert_eq!(m.tmux_pane_id, pane.as_str());
    assert!(b.fake.pane(&pane).is_some(), "its new pane is open");
    assert_eq!(b.task_owner(&task).as_deref(), Some("keeper"));
}

/// The suite's one timeout knob.
#[allow(dead_code)]
#[path = "../../tests/util/timeouts.rs"]
mod timeouts;

/// Lets the supervisor's task (and the file work it hands to the
/// blocking pool) run, without moving the paused clock.
async fn settle() {
    for _ in 0..100 {
        tokio::task::yield_now().await;
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Settles until `cond` holds, the clock paused; fails after the suite's
/// budget (real time) with `what`.
async fn settle_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + timeouts::scaled(timeouts::WAIT);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "waited for {what}");
        settle().await;
    }
}

/// Issue 25, item 4: on a backend that reports pane exits (tmux with
/// pidfds, in-process), the supervisor's loop looks at the panes when one
/// ends and when the roster names a new one, and otherwise only on the
/// slow safety tick: an idle lead lists nothing. The clock is paused, so
/// "nothing for 29 s" is exact.
#[tokio::test(start_paused = true)]
async fn with_exit_events_the_loop_looks_at_panes_only_when_something_happens() {
    use swarm_backends::BackendKind;
    let b = Bench::on(FakeBackend::like(BackendKind::Tmux).with_exit_events());
    let alice = b.spawn("alice").await;
    b.spawn("bob").await;
    let fake = b.fake.clone();
    let looks = move || {
        fake.calls()
            .iter()
            .filter(|c| matches!(c, FakeCall::Status(_)))
            .count()
    };
    let lead = b.lead();
    let shared = lead.shared.clone();
    let seen = move |name: &str| {
        let sh = shared.lock().unwrap_or_else(|e| e.into_inner());
        sh.seen.get(name).cloned()
    };
    let supervisor = tokio::spawn(super::supervise_loop(lead, false));
    settle_until("the first look", || seen("bob") == Some(Seen::Running)).await;
    settle().await;
    let first = looks();

    // Idle, far past any polling period, short of the safety tick.
    tokio::time::advance(super::SAFETY_TICK - Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(looks(), first, "the idle lead listed its panes");

    // A pane's process ends: looked at at once, no tick needed.
    b.fake.exit(&alice, Some(3));
    let exit_code = |name: &str| Some(b.member(name)?.exit().ok()??.code);
    settle_until("alice's death", || exit_code("alice") == Some(Some(3))).await;
    assert!(looks() > first);

    // A teammate another process spawned: looked at when the roster
    // names it, so its exit is an event too.
    let carol = b.spawn("carol").await;
    settle_until("carol looked at", || seen("carol") == Some(Seen::Running)).await;
    b.fake.exit(&carol, Some(4));
    settle_until("carol's death", || exit_code("carol") == Some(Some(4))).await;

    // The safety tick still looks.
    settle().await;
    let idle = looks();
    tokio::time::advance(super::SAFETY_TICK).await;
    settle_until("the safety tick's look", || looks() > idle).await;
    supervisor.abort();
}
