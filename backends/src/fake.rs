//! `FakeBackend` (feature `fake`): a recording backend with no processes,
//! for tests of the lead and for the contract suite. It records every call,
//! lets a test script a pane's exit or disappearance, and has a "stubborn"
//! mode in which a pane ignores the polite step of the kill ladder, so the
//! ladder must escalate to SIGKILL.
//!
//! It is configured as the backend a test stands in for: the kind it
//! reports and the facets it has (`FakeBackend::new().with_kind(BackendKind::Tmux)
//! .with_layout().with_homes()`, or [`FakeBackend::like`] for the facets of a
//! real backend), so code that branches on a facet is tested on both sides.
//! Every facet call that changes something is on [`FakeBackend::calls`].

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::error::{BackendError, Result};
use crate::{
    BackendKind, Capabilities, HomeSessions, Layout, LiveScreens, PaneBackendExecutor, PaneFocus,
    PaneId, PaneMark, PaneRef, PaneStatus, PaneText, Placement, SpawnSpec,
};

/// A signal step of the kill ladder as the fake saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FakeSignal {
    Term,
    Kill,
}

/// One recorded call.
#[derive(Clone, Debug, PartialEq)]
pub enum FakeCall {
    Spawn(Box<SpawnSpec>),
    Status(Vec<PaneId>),
    Kill {
        pane: PaneId,
        grace: Duration,
    },
    Signal {
        pane: PaneId,
        signal: FakeSignal,
    },
    Close(PaneId),
    Focus(PaneId),
    Hide(PaneId),
    Show(PaneId),
    SetTitle(PaneId, String),
    SetColor(PaneId, String),
    Rebalance,
    RestoreHost(PaneId),
    Capture(PaneId),
    /// A home session opened, by name.
    OpenHome(String),
    /// A home session asked to close, with the nonce it must carry.
    CloseHome {
        name: String,
        nonce: String,
    },
    /// Key bytes forwarded to a live screen.
    Input(PaneId, Vec<u8>),
    Resize {
        pane: PaneId,
        rows: u16,
        cols: u16,
    },
}

/// Which facets a fake has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FakeFacets {
    pub focus: bool,
    pub text: bool,
    pub layout: bool,
    pub homes: bool,
    pub screens: bool,
}

/// A fake pane.
#[derive(Clone, Debug)]
pub struct FakePane {
    pub spec: SpawnSpec,
    pub exited: Option<Option<i32>>,
    pub stubborn: bool,
    pub hidden: bool,
    /// What `capture` returns.
    pub screen: String,
    /// The mark the pane carries now (the spec's, unless a test made the
    /// id foreign).
    pub mark: Option<PaneMark>,
    /// The size of its live screen (rows, columns).
    pub size: (u16, u16),
    /// The home session it was opened in, if any.
    pub home: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    calls: Vec<FakeCall>,
    panes: BTreeMap<u64, FakePane>,
    next: u64,
    fail_next_spawn: Option<String>,
    /// Home sessions by name, with the nonce each is marked with.
    homes: BTreeMap<String, String>,
}

/// The recording backend.
#[derive(Debug)]
pub struct FakeBackend {
    state: Mutex<State>,
    kind: BackendKind,
    caps: Capabilities,
    facets: FakeFacets,
    /// Rung by a scripted exit, vanishing or kill when the fake reports
    /// exit events ([`with_exit_events`](Self::with_exit_events)).
    exits: tokio::sync::Notify,
}

impl Default for FakeBackend {
    fn default() -> Self {
        Self::new()
    }
}

fn index(pane: &PaneId) -> Option<u64> {
    pane.as_str().strip_prefix("fake-")?.parse().ok()
}

impl FakeBackend {
    /// A fake that reports `in-process`, whose panes die with the lead,
    /// and that has no facet.
    pub fn new() -> Self {
        FakeBackend {
            state: Mutex::default(),
            kind: BackendKind::InProcess,
            caps: Capabilities {
                panes_outlive_lead: false,
                exact_env: true,
                exit_codes: true,
                exit_events: false,
                list_marked: true,
                output_file: false,
            },
            facets: FakeFacets::default(),
            exits: tokio::sync::Notify::new(),
        }
    }

    /// A fake with the kind and facets of `kind`'s real backend (tmux:
    /// focus, text, layout and homes; in-process: text and screens;
    /// iTerm2: focus; Windows Terminal: none).
    pub fn like(kind: BackendKind) -> Self {
        let fake = Self::new().with_kind(kind);
        match kind {
            BackendKind::Tmux => fake.with_focus().with_text().with_layout().with_homes(),
            BackendKind::InProcess => fake.with_text().with_screens(),
            BackendKind::ITerm2 => fake.with_focus(),
            BackendKind::WindowsTerminal => fake,
        }
    }

    /// Reports `kind`; its panes outlive the lead unless it is in-process.
    pub fn with_kind(mut self, kind: BackendKind) -> Self {
        self.kind = kind;
        self.caps.panes_outlive_lead = kind != BackendKind::InProcess;
        self
    }

    /// Reports `caps` (after [`with_kind`](Self::with_kind), which sets one of them).
    pub fn with_capabilities(mut self, caps: Capabilities) -> Self {
        self.caps = caps;
        self
    }

    /// Reports exit events: [`changes`](PaneBackendExecutor::changes)
    /// resolves after a scripted [`exit`](Self::exit),
    /// [`vanish`](Self::vanish) or a kill, as a real backend's does when a
    /// pane's process ends, and never otherwise.
    pub fn with_exit_events(mut self) -> Self {
        self.caps.exit_events = true;
        self
    }

    /// A pane's process ended: an event, where the fake reports them.
    fn ended(&self) {
        if self.caps.exit_events {
            self.exits.notify_one();
        }
    }

    /// Has the [`PaneFocus`] facet.
    pub fn with_focus(mut self) -> Self {
        self.facets.focus = true;
        self
    }

    /// Has the [`PaneText`] facet: `capture` answers what
    /// [`set_screen`](Self::set_screen) set.
    pub fn with_text(mut self) -> Self {
        self.facets.text = true;
        self
    }

    /// Has the [`Layout`] facet.
    pub fn with_layout(mut self) -> Self {
        self.facets.layout = true;
        self
    }

    /// Has the [`HomeSessions`] facet.
    pub fn with_homes(mut self) -> Self {
        self.facets.homes = true;
        self
    }

    /// Has the [`LiveScreens`] facet: a pane's screen shows what
    /// [`set_screen`](Self::set_screen) set.
    pub fn with_screens(mut self) -> Self {
        self.facets.screens = true;
        self
    }

    /// The facets it has.
    pub fn facets(&self) -> FakeFacets {
        self.facets
    }

    /// The home sessions open now, by name.
    pub fn open_homes(&self) -> Vec<String> {
        self.state().homes.keys().cloned().collect()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<FakeCall> {
        self.state().calls.clone()
    }

    /// The spec a pane was spawned with.
    pub fn spec(&self, pane: impl AsRef<PaneId>) -> Option<SpawnSpec> {
        let i = index(pane.as_ref())?;
        self.state().panes.get(&i).map(|p| p.spec.clone())
    }

    /// The pane, if it is still there.
    pub fn pane(&self, pane: impl AsRef<PaneId>) -> Option<FakePane> {
        let i = index(pane.as_ref())?;
        self.state().panes.get(&i).cloned()
    }

    /// The signals the ladder sent to a pane, in order.
    pub fn signals(&self, pane: impl AsRef<PaneId>) -> Vec<FakeSignal> {
        self.state()
            .calls
            .iter()
            .filter_map(|c| match c {
                FakeCall::Signal { pane: p, signal } if p == pane.as_ref() => Some(*signal),
                _ => None,
            })
            .collect()
    }

    /// Scripts the pane's process to exit with `code` (`None`: by a signal).
    pub fn exit(&self, pane: impl AsRef<PaneId>, code: Option<i32>) {
        let mut st = self.state();
        if let Some(p) = index(pane.as_ref()).and_then(|i| st.panes.get_mut(&i)) {
            p.exited = Some(code);
        }
        drop(st);
        self.ended();
    }

    /// Makes the pane ignore the polite step of the kill ladder.
    pub fn set_stubborn(&self, pane: impl AsRef<PaneId>, stubborn: bool) {
        let mut st = self.state();
        if let Some(p) = index(pane.as_ref()).and_then(|i| st.panes.get_mut(&i)) {
            p.stubborn = stubborn;
        }
    }

    /// Sets what `capture` returns for the pane, and what its live screen
    /// shows.
    pub fn set_screen(&self, pane: impl AsRef<PaneId>, text: &str) {
        let mut st = self.state();
        if let Some(p) = index(pane.as_ref()).and_then(|i| st.panes.get_mut(&i)) {
            p.screen = text.to_string();
        }
    }

    /// Removes a pane as if it was closed behind the backend's back.
    pub fn vanish(&self, pane: impl AsRef<PaneId>) {
        if let Some(i) = index(pane.as_ref()) {
            self.state().panes.remove(&i);
        }
        self.ended();
    }

    /// Removes every pane, as a killed server would.
    pub fn vanish_all(&self) {
        self.state().panes.clear();
        self.ended();
    }

    /// Makes the pane's id name a pane swarm did not start (as a restarted
    /// tmux server reuses `%N` for the user's own programs): it keeps
    /// running, without the mark.
    pub fn make_foreign(&self, pane: impl AsRef<PaneId>) {
        let mut st = self.state();
        if let Some(p) = index(pane.as_ref()).and_then(|i| st.panes.get_mut(&i)) {
            p.mark = None;
            p.exited = None;
            p.stubborn = false;
        }
    }

    /// The ids of the panes still there.
    pub fn live(&self) -> Vec<PaneId> {
        self.state()
            .panes
            .keys()
            .map(|i| PaneId::new(format!("fake-{i}")))
            .collect()
    }

    /// Every pane the ladder closed, in order.
    pub fn kills(&self) -> Vec<PaneId> {
        self.state()
            .calls
            .iter()
            .filter_map(|c| match c {
                FakeCall::Close(p) => Some(p.clone()),
                _ => None,
            })
            .collect()
    }

    /// Makes the next spawn fail with `reason`.
    pub fn fail_next_spawn(&self, reason: &str) {
        self.state().fail_next_spawn = Some(reason.to_string());
    }

    fn record(&self, call: FakeCall) {
        self.state().calls.push(call);
    }

    /// The pane's index if it carries the ref's nonce; `Ok(None)` if gone.
    fn own(&self, pane: &PaneRef) -> Result<Option<u64>> {
        let Some(i) = index(&pane.id) else {
            return Ok(None);
        };
        match self.state().panes.get(&i) {
            None => Ok(None),
            Some(p) if p.mark.as_ref().is_some_and(|m| m.nonce == pane.nonce) => Ok(Some(i)),
            Some(_) => Err(BackendError::NotOurs {
                pane: pane.id.clone(),
            }),
        }
    }

    fn own_known(&self, pane: &PaneRef) -> Result<u64> {
        self.own(pane)?.ok_or_else(|| BackendError::UnknownPane {
            backend: self.kind,
            pane: pane.id.clone(),
        })
    }

    fn known(&self, pane: &PaneId) -> Result<u64> {
        index(pane)
            .filter(|i| self.state().panes.contains_key(i))
            .ok_or_else(|| BackendError::UnknownPane {
                backend: self.kind,
                pane: pane.clone(),
            })
    }

    /// Opens a pane for `spec`, in home session `home` if any.
    fn open(&self, spec: &SpawnSpec, home: Option<String>) -> Result<PaneRef> {
        spec.validate()?;
        let mut st = self.state();
        if let Some(reason) = st.fail_next_spawn.take() {
            return Err(BackendError::Spawn {
                program: spec.program.clone(),
                reason,
            });
        }
        st.next += 1;
        let i = st.next;
        st.panes.insert(
            i,
            FakePane {
                spec: spec.clone(),
                exited: None,
                stubborn: false,
                hidden: false,
                screen: String::new(),
                mark: Some(spec.mark.clone()),
                size: crate::in_process::DEFAULT_SIZE,
                home,
            },
        );
        drop(st);
        spec.signal_ready()?;
        Ok(PaneRef::new(
            PaneId::new(format!("fake-{i}")),
            spec.mark.nonce.clone(),
        ))
    }

    /// The home session a pane placed by `placement` joins: the named one,
    /// or that of the pane it goes beside.
    fn home_of(&self, placement: &Placement) -> Option<String> {
        if !self.facets.homes {
            return None;
        }
        match placement {
            Placement::NewWindow { session } => session.clone(),
            Placement::Session { name } => Some(name.clone()),
            Placement::RightOfLead { lead } => {
                let st = self.state();
                index(lead).and_then(|i| st.panes.get(&i)?.home.clone())
            }
        }
    }
}

/// A fake pane's status as a ref with `nonce` sees it (`None`: as listed).
fn fake_status(fp: &FakePane, nonce: Option<&str>) -> PaneStatus {
    let ours = match (nonce, &fp.mark) {
        (None, _) => true,
        (Some(n), Some(m)) => m.nonce == n,
        (Some(_), None) => false,
    };
    match fp.exited {
        _ if !ours => PaneStatus::Foreign,
        Some(code) => PaneStatus::Exited { code },
        // The fake has no processes, so no pid: never a made-up one.
        None => PaneStatus::Running { pid: None },
    }
}

#[async_trait::async_trait]
impl PaneBackendExecutor for FakeBackend {
    /// The kind it was configured with (`in-process` by default).
    fn kind(&self) -> BackendKind {
        self.kind
    }

    fn capabilities(&self) -> Capabilities {
        self.caps
    }

    fn pane_focus(&self) -> Option<&dyn PaneFocus> {
        self.facets.focus.then_some(self as &dyn PaneFocus)
    }

    fn pane_text(&self) -> Option<&dyn PaneText> {
        self.facets.text.then_some(self as &dyn PaneText)
    }

    fn layout(&self) -> Option<&dyn Layout> {
        self.facets.layout.then_some(self as &dyn Layout)
    }

    fn homes(&self) -> Option<&dyn HomeSessions> {
        self.facets.homes.then_some(self as &dyn HomeSessions)
    }

    fn screens(&self) -> Option<&dyn LiveScreens> {
        self.facets.screens.then_some(self as &dyn LiveScreens)
    }

    async fn spawn(&self, spec: &SpawnSpec) -> Result<PaneRef> {
        self.record(FakeCall::Spawn(Box::new(spec.clone())));
        self.open(spec, self.home_of(&spec.placement))
    }

    async fn status(&self, panes: &[PaneRef]) -> Result<Vec<(PaneId, PaneStatus)>> {
        self.record(FakeCall::Status(
            panes.iter().map(|p| p.id.clone()).collect(),
        ));
        let st = self.state();
        Ok(panes
            .iter()
            .map(|p| {
                let status = match index(&p.id).and_then(|i| st.panes.get(&i)) {
                    None => PaneStatus::Gone,
                    Some(fp) => fake_status(fp, Some(&p.nonce)),
                };
                (p.id.clone(), status)
            })
            .collect())
    }

    async fn observe(&self, panes: &[PaneId]) -> Result<Vec<(PaneId, PaneStatus)>> {
        let st = self.state();
        Ok(panes
            .iter()
            .map(|id| {
                let status = match index(id).and_then(|i| st.panes.get(&i)) {
                    None => PaneStatus::Gone,
                    Some(fp) => fake_status(fp, None),
                };
                (id.clone(), status)
            })
            .collect())
    }

    async fn list_marked(&self) -> Result<Vec<(PaneRef, PaneMark, PaneStatus)>> {
        let st = self.state();
        Ok(st
            .panes
            .iter()
            .filter_map(|(i, fp)| {
                let mark = fp.mark.clone()?;
                let pane = PaneRef::new(PaneId::new(format!("fake-{i}")), mark.nonce.clone());
                Some((pane, mark, fake_status(fp, None)))
            })
            .collect())
    }

    async fn kill(&self, pane: &PaneRef, grace: Duration) -> Result<()> {
        self.record(FakeCall::Kill {
            pane: pane.id.clone(),
            grace,
        });
        let Some(i) = self.own(pane)? else {
            return Ok(());
        };
        let pane = &pane.id;
        let (running, stubborn) = match self.state().panes.get(&i) {
            None => return Ok(()),
            Some(p) => (p.exited.is_none(), p.stubborn),
        };
        if running {
            self.record(FakeCall::Signal {
                pane: pane.clone(),
                signal: FakeSignal::Term,
            });
            if stubborn {
                // A stubborn pane outlives the grace period.
                tokio::time::sleep(grace).await;
                self.record(FakeCall::Signal {
                    pane: pane.clone(),
                    signal: FakeSignal::Kill,
                });
            }
        }
        self.record(FakeCall::Close(pane.clone()));
        self.state().panes.remove(&i);
        self.ended();
        Ok(())
    }

    /// Where configured ([`FakeBackend::with_exit_events`]): after a
    /// scripted exit, vanishing or a kill; otherwise never.
    async fn changes(&self) {
        if self.caps.exit_events {
            self.exits.notified().await
        } else {
            std::future::pending::<()>().await
        }
    }
}

#[async_trait::async_trait]
impl PaneFocus for FakeBackend {
    async fn focus(&self, pane: &PaneId) -> Result<()> {
        self.record(FakeCall::Focus(pane.clone()));
        self.known(pane).map(drop)
    }
}

#[async_trait::async_trait]
impl PaneText for FakeBackend {
    async fn capture(&self, pane: &PaneId) -> Result<String> {
        self.record(FakeCall::Capture(pane.clone()));
        let i = self.known(pane)?;
        Ok(self
            .state()
            .panes
            .get(&i)
            .map(|p| p.screen.clone())
            .unwrap_or_default())
    }
}

#[async_trait::async_trait]
impl Layout for FakeBackend {
    async fn hide(&self, pane: &PaneRef) -> Result<()> {
        self.record(FakeCall::Hide(pane.id.clone()));
        let i = self.own_known(pane)?;
        if let Some(p) = self.state().panes.get_mut(&i) {
            p.hidden = true;
        }
        Ok(())
    }

    async fn show(&self, pane: &PaneRef) -> Result<()> {
        self.record(FakeCall::Show(pane.id.clone()));
        let i = self.own_known(pane)?;
        if let Some(p) = self.state().panes.get_mut(&i) {
            p.hidden = false;
        }
        Ok(())
    }

    async fn set_title(&self, pane: &PaneId, title: &str) -> Result<()> {
        self.record(FakeCall::SetTitle(pane.clone(), title.to_string()));
        let i = self.known(pane)?;
        if let Some(p) = self.state().panes.get_mut(&i) {
            p.spec.title = title.to_string();
        }
        Ok(())
    }

    async fn set_color(&self, pane: &PaneId, color: &str) -> Result<()> {
        self.record(FakeCall::SetColor(pane.clone(), color.to_string()));
        let i = self.known(pane)?;
        if let Some(p) = self.state().panes.get_mut(&i) {
            p.spec.color = Some(color.to_string());
        }
        Ok(())
    }

    async fn rebalance(&self) -> Result<()> {
        self.record(FakeCall::Rebalance);
        Ok(())
    }

    async fn restore_host(&self, host: &PaneId) -> Result<()> {
        self.record(FakeCall::RestoreHost(host.clone()));
        Ok(())
    }

    /// The fake puts every pane beside the lead.
    async fn placed_apart(&self, _pane: &PaneId) -> Option<String> {
        None
    }
}

/// Home sessions as names with the nonce each is marked with; a pane
/// spawned into one (by name, or beside a pane in it) closes with it.
#[async_trait::async_trait]
impl HomeSessions for FakeBackend {
    async fn home_exists(&self, name: &str) -> Result<bool> {
        Ok(self.state().homes.contains_key(name))
    }

    async fn open_home(&self, name: &str, lead: &SpawnSpec) -> Result<PaneRef> {
        self.record(FakeCall::OpenHome(name.to_string()));
        if self.state().homes.contains_key(name) {
            return Err(BackendError::invalid(
                "home session",
                name,
                "already exists",
            ));
        }
        let pane = self.open(lead, Some(name.to_string()))?;
        self.state()
            .homes
            .insert(name.to_string(), lead.mark.nonce.clone());
        Ok(pane)
    }

    async fn close_home(&self, name: &str, nonce: &str) -> Result<()> {
        self.record(FakeCall::CloseHome {
            name: name.to_string(),
            nonce: nonce.to_string(),
        });
        let mut st = self.state();
        match st.homes.get(name) {
            None => Ok(()),
            Some(mark) if nonce.is_empty() || mark != nonce => Err(BackendError::invalid(
                "home session",
                name,
                "does not carry swarm's mark for this team (not created by it); left untouched",
            )),
            Some(_) => {
                st.homes.remove(name);
                st.panes.retain(|_, p| p.home.as_deref() != Some(name));
                Ok(())
            }
        }
    }

    fn attach_argv(&self, name: &str) -> Result<Vec<String>> {
        Ok(vec!["fake-attach".to_string(), name.to_string()])
    }

    /// The fake has no clients.
    async fn detach(&self, _name: &str, _client_pid: u32) -> Result<bool> {
        Ok(false)
    }
}

/// A pane's screen is what [`FakeBackend::set_screen`] set, drawn at the
/// pane's size.
impl LiveScreens for FakeBackend {
    fn hosts(&self, pane: &PaneId) -> bool {
        self.known(pane).is_ok()
    }

    fn with_screen(&self, pane: &PaneId, f: &mut dyn FnMut(&vt100::Screen)) -> Result<()> {
        let i = self.known(pane)?;
        let Some((text, (rows, cols))) = self
            .state()
            .panes
            .get(&i)
            .map(|p| (p.screen.clone(), p.size))
        else {
            return Ok(());
        };
        let mut parser = vt100::Parser::new(rows, cols, 0);
        parser.process(text.replace('\n', "\r\n").as_bytes());
        f(parser.screen());
        Ok(())
    }

    fn write_input(&self, pane: &PaneId, bytes: &[u8]) -> Result<()> {
        self.record(FakeCall::Input(pane.clone(), bytes.to_vec()));
        self.known(pane).map(drop)
    }

    fn resize(&self, pane: &PaneId, rows: u16, cols: u16) -> Result<()> {
        self.record(FakeCall::Resize {
            pane: pane.clone(),
            rows,
            cols,
        });
        let i = self.known(pane)?;
        if let Some(p) = self.state().panes.get_mut(&i) {
            p.size = (rows, cols);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> SpawnSpec {
        SpawnSpec::new("agent", ["--x"], std::env::temp_dir()).title("alice")
    }

    #[tokio::test]
    async fn records_calls_and_scripts_exits() {
        let fake = FakeBackend::new();
        let p = fake.spawn(&spec()).await.unwrap();
        assert_eq!(fake.spec(&p).unwrap().title, "alice");
        assert_eq!(
            fake.status(std::slice::from_ref(&p)).await.unwrap()[0].1,
            PaneStatus::Running { pid: None }
        );
        fake.exit(&p, Some(3));
        assert_eq!(
            fake.status(std::slice::from_ref(&p)).await.unwrap()[0].1,
            PaneStatus::Exited { code: Some(3) }
        );
        assert!(matches!(fake.calls()[0], FakeCall::Spawn(_)));
    }

    #[tokio::test]
    async fn a_stubborn_pane_makes_the_ladder_escalate() {
        let fake = FakeBackend::new();
        let polite = fake.spawn(&spec()).await.unwrap();
        let stubborn = fake.spawn(&spec()).await.unwrap();
        fake.set_stubborn(&stubborn, true);
        fake.kill(&polite, Duration::from_millis(10)).await.unwrap();
        fake.kill(&stubborn, Duration::from_millis(10))
            .await
            .unwrap();
        assert_eq!(fake.signals(&polite), [FakeSignal::Term]);
        assert_eq!(
            fake.signals(&stubborn),
            [FakeSignal::Term, FakeSignal::Kill]
        );
        let st = fake.status(&[polite, stubborn]).await.unwrap();
        assert!(st.iter().all(|(_, s)| *s == PaneStatus::Gone));
    }

    #[test]
    fn a_fake_has_the_kind_and_only_the_facets_it_was_given() {
        let bare = FakeBackend::new();
        assert_eq!(bare.kind(), BackendKind::InProcess);
        assert!(bare.pane_focus().is_none() && bare.pane_text().is_none());
        assert!(bare.layout().is_none() && bare.homes().is_none() && bare.screens().is_none());
        assert!(!bare.capabilities().panes_outlive_lead);
        let tmux = FakeBackend::like(BackendKind::Tmux);
        assert_eq!(tmux.kind(), BackendKind::Tmux);
        assert!(tmux.capabilities().panes_outlive_lead);
        assert!(tmux.pane_focus().is_some() && tmux.pane_text().is_some());
        assert!(tmux.layout().is_some() && tmux.homes().is_some());
        assert!(tmux.screens().is_none());
        let inproc = FakeBackend::like(BackendKind::InProcess);
        assert!(inproc.screens().is_some() && inproc.layout().is_none());
    }

    #[tokio::test]
    async fn a_home_closes_with_its_panes_and_only_with_its_mark() {
        let fake = FakeBackend::like(BackendKind::Tmux);
        let homes = fake.homes().unwrap();
        let lead = homes.open_home("swarm-t", &spec()).await.unwrap();
        assert!(homes.open_home("swarm-t", &spec()).await.is_err());
        let beside = fake
            .spawn(&spec().placement(Placement::RightOfLead {
                lead: lead.id.clone(),
            }))
            .await
            .unwrap();
        let elsewhere = fake.spawn(&spec()).await.unwrap();
        assert!(homes.close_home("swarm-t", "not-its-nonce").await.is_err());
        assert!(homes.home_exists("swarm-t").await.unwrap());
        homes.close_home("swarm-t", &lead.nonce).await.unwrap();
        assert!(!homes.home_exists("swarm-t").await.unwrap());
        assert!(fake.pane(&lead).is_none() && fake.pane(&beside).is_none());
        assert!(fake.pane(&elsewhere).is_some(), "a pane of no home stays");
    }

    #[tokio::test]
    async fn a_live_screen_shows_the_set_text_and_records_keys_and_sizes() {
        let fake = FakeBackend::like(BackendKind::InProcess);
        let p = fake.spawn(&spec()).await.unwrap();
        fake.set_screen(&p, "first line\nsecond line");
        let screens = fake.screens().unwrap();
        assert!(screens.hosts(&p.id));
        screens.resize(&p.id, 10, 40).unwrap();
        let mut seen = (String::new(), (0, 0));
        screens
            .with_screen(&p.id, &mut |s| seen = (s.contents(), s.size()))
            .unwrap();
        assert_eq!(seen, ("first line\nsecond line".to_string(), (10, 40)));
        screens.write_input(&p.id, b"y\r").unwrap();
        assert!(
            fake.calls()
                .contains(&FakeCall::Input(p.id.clone(), b"y\r".to_vec()))
        );
    }

    #[tokio::test]
    async fn a_scripted_spawn_failure() {
        let fake = FakeBackend::new();
        fake.fail_next_spawn("no room");
        assert!(fake.spawn(&spec()).await.is_err());
        assert!(fake.spawn(&spec()).await.is_ok());
    }
}
