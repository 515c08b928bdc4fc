//! `up` and `down` on a fake configured as tmux (home sessions, layout)
//! or as a backend without them (STYLE layer 2): where the lead's pane
//! opens, where the teammates go, what the session record keeps, and that
//! `down` closes every pane and the home it made, and only with its mark.

use super::Bench;
use crate::ops::TeamOps;
use crate::session::Session;
use crate::team::Member;
use std::sync::Arc;
use std::time::Duration;
use swarm_backends::fake::{FakeBackend, FakeCall};
use swarm_backends::{BackendKind, PaneId, PaneMark, PaneRef, Placement, SpawnSpec};

/// The team's verbs and its session, shared as `up` shares them.
fn up_ops(b: &Bench) -> (TeamOps, Arc<Session>) {
    let opened = Arc::new(b.opened());
    (TeamOps::as_lead(b.team.clone(), opened.clone()), opened)
}

/// Teammates reserved on the roster with no pane yet, as `up SPEC` leaves
/// them before it opens any pane.
fn reserve(b: &Bench, names: &[&str]) {
    let cwd = b._dir.path().to_string_lossy().into_owned();
    let members = names
        .iter()
        .map(|n| Member::teammate("t", n, "blue", &cwd))
        .collect();
    b.team.roster().add_members(members).unwrap();
}

/// `name`'s pane as the roster records it.
fn pane_of(b: &Bench, name: &str) -> PaneId {
    PaneId::new(b.member(name).expect("on the roster").tmux_pane_id)
}

/// The spec of the lead's own pane.
fn lead_spec(b: &Bench) -> SpawnSpec {
    SpawnSpec::new("swarm", ["lead"], b._dir.path())
        .title("lead")
        .mark(PaneMark::new("t", crate::names::LEAD_NAME))
}

/// `up` on a backend with home sessions: the lead in its home, then every
/// reserved teammate.
async fn up_in_home(b: &Bench, ops: &TeamOps, opened: &Session) -> PaneRef {
    let homes = opened.backend.homes().expect("the fake has home sessions");
    let lead = ops
        .open_lead_home(opened, homes, lead_spec(b))
        .await
        .unwrap();
    ops.complete(opened).await.unwrap();
    lead
}

fn opened_homes(b: &Bench) -> Vec<String> {
    b.fake
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            FakeCall::OpenHome(name) => Some(name),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn up_opens_the_lead_in_its_home_and_every_teammate_beside_it() {
    let b = Bench::on(FakeBackend::like(BackendKind::Tmux));
    reserve(&b, &["ann", "bob"]);
    let (ops, opened) = up_ops(&b);
    let lead = up_in_home(&b, &ops, &opened).await;
    let record = opened.record();
    let home = record.session.clone().expect("the record names the home");
    assert_eq!(opened_homes(&b), std::slice::from_ref(&home));
    assert_eq!(b.fake.open_homes(), std::slice::from_ref(&home));
    assert_eq!(record.lead_pane.as_ref(), Some(&lead.id));
    assert_eq!(record.home_mark(), Some(lead.nonce.as_str()));
    for name in ["ann", "bob"] {
        let pane = pane_of(&b, name);
        let fp = b.fake.pane(&pane).expect("a pane");
        assert_eq!(
            fp.spec.placement,
            Placement::RightOfLead {
                lead: lead.id.clone()
            },
            "{name} beside the lead"
        );
        assert_eq!(
            fp.home.as_deref(),
            Some(home.as_str()),
            "{name} in the home"
        );
    }
}

#[tokio::test]
async fn up_after_the_lead_died_opens_a_window_of_the_same_home_which_keeps_its_mark() {
    let b = Bench::on(FakeBackend::like(BackendKind::Tmux));
    let (ops, opened) = up_ops(&b);
    let first = up_in_home(&b, &ops, &opened).await;
    // The lead was killed; its home stays.
    b.fake.vanish(&first);
    let second = up_in_home(&b, &ops, &opened).await;
    let home = opened.record().session.unwrap();
    assert_eq!(
        opened_homes(&b),
        std::slice::from_ref(&home),
        "the home is not made again"
    );
    assert_eq!(
        b.fake.pane(&second).unwrap().spec.placement,
        Placement::NewWindow {
            session: Some(home)
        }
    );
    let record = opened.record();
    assert_eq!(record.lead_pane, Some(second.id.clone()));
    assert_eq!(record.lead_nonce.as_deref(), Some(second.nonce.as_str()));
    assert_eq!(
        record.home_mark(),
        Some(first.nonce.as_str()),
        "the home keeps the mark it was made with"
    );
}

/// A member whose end is recorded (here: its pane went to another
/// program, so the lead forgot the id and recorded it lost) is not one an
/// interrupted `up` left: `complete` starts only the never-started one.
#[tokio::test]
async fn complete_starts_the_never_started_and_not_one_recorded_lost() {
    let b = Bench::on(FakeBackend::like(BackendKind::Tmux));
    reserve(&b, &["ann", "bob"]);
    b.team
        .roster()
        .update_member("bob", |m| {
            m.set_exit(Some(&crate::team::ExitRecord {
                code: None,
                at: 1,
                lost: Some("%2".to_string()),
                said: None,
            }));
        })
        .unwrap();
    let (ops, opened) = up_ops(&b);
    let lines = ops.complete(&opened).await.unwrap();
    assert!(!pane_of(&b, "ann").as_str().is_empty(), "{lines:?}");
    let bob = b.member("bob").unwrap();
    assert!(bob.tmux_pane_id.is_empty(), "bob was started: {lines:?}");
    assert!(
        bob.exit().unwrap().is_some_and(|e| e.lost.is_some()),
        "its loss stays on record"
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
}

#[tokio::test]
async fn up_without_home_sessions_opens_the_teammates_in_new_windows() {
    let b = Bench::on(FakeBackend::like(BackendKind::ITerm2));
    reserve(&b, &["ann"]);
    let (ops, opened) = up_ops(&b);
    ops.complete(&opened).await.unwrap();
    let pane = pane_of(&b, "ann");
    assert_eq!(
        b.fake.pane(&pane).expect("ann's pane").spec.placement,
        Placement::NewWindow { session: None }
    );
    assert!(opened_homes(&b).is_empty() && opened.record().session.is_none());
}

#[tokio::test]
async fn down_kills_every_teammate_then_closes_the_home_with_its_mark() {
    let b = Bench::on(FakeBackend::like(BackendKind::Tmux));
    reserve(&b, &["ann", "bob"]);
    let (ops, opened) = up_ops(&b);
    let lead = up_in_home(&b, &ops, &opened).await;
    let home = opened.record().session.unwrap();
    let r = ops.down(Duration::ZERO, true).await.unwrap();
    let mut killed = r.killed.clone();
    killed.sort();
    assert_eq!(killed, ["ann", "bob"], "no answer, --force: killed");
    assert!(r.deleted, "the team is deleted");
    assert!(
        b.fake.calls().contains(&FakeCall::CloseHome {
            name: home,
            nonce: lead.nonce.clone()
        }),
        "the home is closed with the mark it was made with: {:?}",
        b.fake.calls()
    );
    assert!(b.fake.open_homes().is_empty());
    assert!(
        b.fake.live().is_empty(),
        "no pane is left: {:?}",
        b.fake.live()
    );
    assert!(!b.team.roster().exists(), "the roster is gone");
}

#[tokio::test]
async fn down_of_a_team_led_from_the_users_pane_puts_its_window_back_and_leaves_it() {
    let b = Bench::on(FakeBackend::like(BackendKind::Tmux));
    let (ops, opened) = up_ops(&b);
    // The lead ran in the user's own pane: no mark of swarm's on it.
    let users = PaneId::new("%0");
    opened
        .update_record(|r| r.lead_pane = Some(users.clone()))
        .unwrap();
    let r = ops.down(Duration::ZERO, true).await.unwrap();
    assert!(r.deleted);
    let calls = b.fake.calls();
    assert!(calls.contains(&FakeCall::RestoreHost(users)), "{calls:?}");
    assert!(
        !calls
            .iter()
            .any(|c| matches!(c, FakeCall::Kill { .. } | FakeCall::CloseHome { .. })),
        "the user's pane is never closed: {calls:?}"
    );
}
