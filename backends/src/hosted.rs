//! One backend over several machines (DESIGN §13): this machine's backend,
//! and a [`TmuxBackend`] on each other host ([`TmuxBackend::on_host`]).
//! A pane on another host is named `HOST:%N` (pane identity includes the
//! host): every call about it goes to that host's backend with the bare
//! id, and its answers come back under the full one. Everything else is
//! this machine's backend's.
//!
//! A host that cannot be reached makes no pane of it look dead: its panes
//! read as running (pid unknown) while the host does not answer, as a
//! machine behind a partition may well still run them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::tmux::TmuxBackend;
use crate::{
    BackendKind, Capabilities, HomeSessions, Layout, LiveScreens, PaneBackendExecutor, PaneFocus,
    PaneId, PaneMark, PaneRef, PaneStatus, PaneText, Result, SpawnSpec,
};

/// This machine's backend and the other hosts' tmux backends.
pub struct Hosted {
    local: Arc<dyn PaneBackendExecutor>,
    hosts: BTreeMap<String, Arc<TmuxBackend>>,
    /// Hosts whose last look failed: since when, why, and when they were
    /// last tried.
    unreachable: std::sync::Mutex<BTreeMap<String, Away>>,
    /// Where each host that did not answer is noted for other processes
    /// (`<dir>/<host>.away`), if anywhere ([`Hosted::noting_in`]).
    notes: Option<std::path::PathBuf>,
}

/// A host that does not answer.
#[derive(Debug, Clone)]
struct Away {
    since: std::time::SystemTime,
    why: String,
    tried: std::time::Instant,
}

/// How long a host that did not answer is not asked again (its panes read
/// as running meanwhile): a long-lived caller (the lead, several looks a
/// minute) pays a partitioned host's deadline once in this long, not at
/// every look.
pub const RETRY_AFTER: Duration = Duration::from_secs(10);

impl std::fmt::Debug for Hosted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hosted")
            .field("local", &self.local.kind())
            .field("hosts", &self.hosts.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The note in `dir` that host `name` (whose calls have `deadline`) did
/// not answer, if one was written recently enough to believe: within
/// [`RETRY_AFTER`] plus that deadline (and a second), the longest the
/// next look of the process that wrote it takes. Since when (as that
/// process first saw it) and why.
pub fn noted_away(
    dir: &std::path::Path,
    name: &str,
    deadline: Duration,
) -> Option<(std::time::SystemTime, String)> {
    let path = dir.join(format!("{name}.away"));
    let written = std::fs::symlink_metadata(&path).ok()?;
    if !written.is_file() {
        return None;
    }
    let age = written.modified().ok()?.elapsed().unwrap_or_default();
    if age > RETRY_AFTER + deadline + Duration::from_secs(1) {
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let (since, why) = text.split_once('\n')?;
    let since = std::time::UNIX_EPOCH + Duration::from_millis(since.trim().parse().ok()?);
    Some((since, why.trim().to_string()))
}

/// The host of a pane id and its id there (`box:%3` → `box`, `%3`); `None`
/// for a pane of this machine.
pub fn split_id(id: &PaneId) -> Option<(&str, PaneId)> {
    let (host, bare) = id.as_str().split_once(':')?;
    Some((host, PaneId::new(bare)))
}

/// The full id of pane `bare` of `host`.
pub fn full_id(host: &str, bare: &PaneId) -> PaneId {
    PaneId::new(format!("{host}:{}", bare.as_str()))
}

impl Hosted {
    pub fn new(
        local: Arc<dyn PaneBackendExecutor>,
        hosts: BTreeMap<String, Arc<TmuxBackend>>,
    ) -> Hosted {
        Hosted {
            local,
            hosts,
            unreachable: std::sync::Mutex::new(BTreeMap::new()),
            notes: None,
        }
    }

    /// Notes each host that did not answer in `dir` (one small file per
    /// host, removed once it answers), and takes such a note by another
    /// process as its own failed look: a fresh `swarm status` beside a
    /// lead that looks every few seconds shows a partitioned host's
    /// teammates unreachable at once, instead of paying the host's
    /// deadline itself. A note is believed for [`RETRY_AFTER`] plus the
    /// host's deadline after it was written (the lead's next look takes
    /// that long at most), then the host is asked again.
    pub fn noting_in(mut self, dir: std::path::PathBuf) -> Hosted {
        self.notes = Some(dir);
        self
    }

    fn note_path(&self, name: &str) -> Option<std::path::PathBuf> {
        Some(self.notes.as_ref()?.join(format!("{name}.away")))
    }

    /// Another process's note that host `name` did not answer, if it is
    /// recent enough to believe (see [`noted_away`]).
    fn noted(&self, name: &str) -> Option<(std::time::SystemTime, String)> {
        let deadline = self
            .hosts
            .get(name)?
            .host()
            .map_or(Duration::ZERO, |h| h.timeout);
        noted_away(self.notes.as_ref()?, name, deadline)
    }

    /// Writes (or removes) the note of host `name` for other processes.
    fn write_note(&self, name: &str, away: Option<&Away>) {
        let Some(path) = self.note_path(name) else {
            return;
        };
        let done = match away {
            None => match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
            Some(a) => {
                let since = a
                    .since
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_millis();
                let tmp = path.with_extension(format!("away.{}", std::process::id()));
                let why = a.why.replace('\n', " ");
                std::fs::write(&tmp, format!("{since}\n{why}\n"))
                    .and_then(|()| std::fs::rename(&tmp, &path))
            }
        };
        // A note that cannot be written only makes the other processes
        // ask the host themselves (as without notes): nothing is lost.
        drop(done);
    }

    /// Since when host `name` has not answered, and why (its last look
    /// failed); `None` while it answers.
    pub fn unreachable(&self, name: &str) -> Option<(std::time::SystemTime, String)> {
        self.unreachable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .map(|a| (a.since, a.why.clone()))
    }

    /// Whether host `name` did not answer less than [`RETRY_AFTER`] ago
    /// (here, or, by its note, in another process: then taken as this
    /// process's own look).
    fn resting(&self, name: &str) -> bool {
        let mut u = self.unreachable.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = u.get(name) {
            return a.tried.elapsed() < RETRY_AFTER;
        }
        match self.noted(name) {
            Some((since, why)) => {
                u.insert(
                    name.to_string(),
                    Away {
                        since,
                        why,
                        tried: std::time::Instant::now(),
                    },
                );
                true
            }
            None => false,
        }
    }

    /// Notes how the last look at host `name` went.
    fn note(&self, name: &str, failed: Option<String>) {
        let mut u = self.unreachable.lock().unwrap_or_else(|e| e.into_inner());
        match failed {
            None => {
                u.remove(name);
                self.write_note(name, None);
            }
            Some(why) => {
                let since = self
                    .noted(name)
                    .map_or_else(std::time::SystemTime::now, |(since, _)| since);
                let a = u.entry(name.to_string()).or_insert_with(|| Away {
                    since,
                    why: String::new(),
                    tried: std::time::Instant::now(),
                });
                a.why = why;
                a.tried = std::time::Instant::now();
                self.write_note(name, Some(a));
            }
        }
    }

    /// The backend of host `name`.
    pub fn host(&self, name: &str) -> Option<&Arc<TmuxBackend>> {
        self.hosts.get(name)
    }

    /// Opens a pane on host `name`; its id comes back as `NAME:%N`.
    pub async fn spawn_on(&self, name: &str, spec: &SpawnSpec) -> Result<PaneRef> {
        let backend = self.known(name)?;
        let pane = backend.spawn(spec).await?;
        Ok(PaneRef::new(full_id(name, &pane.id), pane.nonce))
    }

    /// Ends each host's tmux server (`kill-server`, its panes already
    /// closed) and its shared ssh connection: what `down` leaves of them.
    pub async fn shut_hosts(&self) {
        for b in self.hosts.values() {
            b.kill_server().await;
            if let Some(h) = b.host() {
                let h = h.clone();
                // Deliberate ignore: a closing; nothing is left to report.
                let _ = tokio::task::spawn_blocking(move || h.close()).await;
            }
        }
    }

    fn known(&self, name: &str) -> Result<&Arc<TmuxBackend>> {
        self.hosts.get(name).ok_or_else(|| {
            crate::BackendError::invalid("host", name, "is not one of the team's hosts")
        })
    }

    /// Indices of `ids` by where they live: `None` is this machine.
    fn by_host<'a>(
        &self,
        ids: impl Iterator<Item = &'a PaneId>,
    ) -> BTreeMap<Option<String>, Vec<usize>> {
        let mut out: BTreeMap<Option<String>, Vec<usize>> = BTreeMap::new();
        for (i, id) in ids.enumerate() {
            let host = split_id(id).map(|(h, _)| h.to_string());
            out.entry(host).or_default().push(i);
        }
        out
    }

    /// `status` or `observe` over every machine, in the order asked.
    async fn statuses(&self, ids: &[PaneId], ask: Ask<'_>) -> Result<Vec<(PaneId, PaneStatus)>> {
        let mut out: Vec<Option<(PaneId, PaneStatus)>> = vec![None; ids.len()];
        for (host, idx) in self.by_host(ids.iter()) {
            let Some(h) = host else {
                let answers = ask.ask(self.local.as_ref(), &idx, false).await?;
                for (i, a) in idx.iter().zip(answers) {
                    out[*i] = Some(a);
                }
                continue;
            };
            let answers = match self.known(&h) {
                Ok(_) if self.resting(&h) => Err(None),
                Ok(b) => ask.ask(b.as_ref(), &idx, true).await.map_err(Some),
                Err(e) => Err(Some(e)),
            };
            if let Ok(_) | Err(Some(_)) = &answers {
                let failed = answers
                    .as_ref()
                    .err()
                    .and_then(|e| e.as_ref())
                    .map(ToString::to_string);
                self.note(&h, failed);
            }
            match answers {
                Ok(a) => {
                    for (i, (bare, st)) in idx.iter().zip(a) {
                        out[*i] = Some((full_id(&h, &bare), st));
                    }
                }
                // Not seen gone: running, for all anyone knows (the caller
                // asks `unreachable` to tell). A host resting after a
                // failure is not asked.
                Err(_) => {
                    for i in &idx {
                        out[*i] = Some((ids[*i].clone(), PaneStatus::Running { pid: None }));
                    }
                }
            }
        }
        Ok(out
            .into_iter()
            .map(|o| o.expect("every pane answered"))
            .collect())
    }
}

/// One question about some of the panes asked about, put to one
/// machine's backend with the panes' ids there.
#[derive(Clone, Copy)]
enum Ask<'p> {
    Status(&'p [PaneRef]),
    Observe(&'p [PaneId]),
}

impl Ask<'_> {
    async fn ask(
        self,
        backend: &dyn PaneBackendExecutor,
        which: &[usize],
        remote: bool,
    ) -> Result<Vec<(PaneId, PaneStatus)>> {
        let there = |id: &PaneId| match remote {
            true => split_id(id).map_or_else(|| id.clone(), |(_, bare)| bare),
            false => id.clone(),
        };
        match self {
            Ask::Status(panes) => {
                let refs: Vec<PaneRef> = which
                    .iter()
                    .map(|i| PaneRef::new(there(&panes[*i].id), panes[*i].nonce.clone()))
                    .collect();
                backend.status(&refs).await
            }
            Ask::Observe(ids) => {
                let ids: Vec<PaneId> = which.iter().map(|i| there(&ids[*i])).collect();
                backend.observe(&ids).await
            }
        }
    }
}

#[async_trait::async_trait]
impl PaneBackendExecutor for Hosted {
    fn kind(&self) -> BackendKind {
        self.local.kind()
    }

    fn capabilities(&self) -> Capabilities {
        self.local.capabilities()
    }

    async fn spawn(&self, spec: &SpawnSpec) -> Result<PaneRef> {
        self.local.spawn(spec).await
    }

    async fn spawn_many(&self, specs: &[SpawnSpec]) -> Vec<Result<PaneRef>> {
        self.local.spawn_many(specs).await
    }

    async fn status(&self, panes: &[PaneRef]) -> Result<Vec<(PaneId, PaneStatus)>> {
        let ids: Vec<PaneId> = panes.iter().map(|p| p.id.clone()).collect();
        self.statuses(&ids, Ask::Status(panes)).await
    }

    async fn kill(&self, pane: &PaneRef, grace: Duration) -> Result<()> {
        match split_id(&pane.id) {
            None => self.local.kill(pane, grace).await,
            Some((host, bare)) => {
                self.known(host)?
                    .kill(&PaneRef::new(bare, pane.nonce.clone()), grace)
                    .await
            }
        }
    }

    async fn kill_all(&self, panes: &[PaneRef], grace: Duration) -> Vec<Result<()>> {
        let mut out: Vec<Option<Result<()>>> = (0..panes.len()).map(|_| None).collect();
        for (host, idx) in self.by_host(panes.iter().map(|p| &p.id)) {
            let results = match &host {
                None => {
                    let refs: Vec<PaneRef> = idx.iter().map(|i| panes[*i].clone()).collect();
                    self.local.kill_all(&refs, grace).await
                }
                Some(h) => match self.known(h) {
                    Ok(b) => {
                        let refs: Vec<PaneRef> = idx
                            .iter()
                            .map(|i| {
                                let p = &panes[*i];
                                let bare = split_id(&p.id).map_or_else(|| p.id.clone(), |(_, b)| b);
                                PaneRef::new(bare, p.nonce.clone())
                            })
                            .collect();
                        b.kill_all(&refs, grace).await
                    }
                    Err(e) => {
                        let e = e.to_string();
                        idx.iter()
                            .map(|_| Err(crate::BackendError::invalid("host", h, e.clone())))
                            .collect()
                    }
                },
            };
            for (i, r) in idx.iter().zip(results) {
                out[*i] = Some(r);
            }
        }
        out.into_iter()
            .map(|o| o.expect("every pane answered"))
            .collect()
    }

    async fn await_ended(&self, pid: u32, within: Duration) {
        self.local.await_ended(pid, within).await
    }

    async fn observe(&self, panes: &[PaneId]) -> Result<Vec<(PaneId, PaneStatus)>> {
        self.statuses(panes, Ask::Observe(panes)).await
    }

    async fn list_marked(&self) -> Result<Vec<(PaneRef, PaneMark, PaneStatus)>> {
        self.local.list_marked().await
    }

    async fn changes(&self) {
        self.local.changes().await
    }

    async fn checked_version(&self) -> Option<(u32, u32)> {
        self.local.checked_version().await
    }

    fn pane_focus(&self) -> Option<&dyn PaneFocus> {
        self.local.pane_focus()
    }

    fn pane_text(&self) -> Option<&dyn PaneText> {
        self.local.pane_text()
    }

    fn layout(&self) -> Option<&dyn Layout> {
        self.local.layout()
    }

    fn homes(&self) -> Option<&dyn HomeSessions> {
        self.local.homes()
    }

    fn screens(&self) -> Option<&dyn LiveScreens> {
        self.local.screens()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::SshHost;
    use crate::tmux::TmuxServer;

    /// A host behind a partition: its "ssh" answers nothing, ever. The
    /// first look pays its deadline and finds it unreachable; the looks
    /// after it, for [`RETRY_AFTER`], ask nothing and say the same.
    /// A `Hosted` over one host `box` whose "ssh" (in `dir`) counts its
    /// calls in `dir/calls` and answers nothing, ever (a partition).
    fn partitioned(dir: &std::path::Path) -> Hosted {
        let calls = dir.join("calls");
        let ssh = dir.join("ssh");
        std::fs::write(
            &ssh,
            format!(
                "#!/bin/sh\necho x >> '{}'\nexec sleep 30\n",
                calls.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
        let host = SshHost::new("box", "box")
            .unwrap()
            .program(ssh.display().to_string())
            .timeout(Duration::from_millis(300));
        let mut hosts = BTreeMap::new();
        hosts.insert(
            "box".to_string(),
            Arc::new(TmuxBackend::on_host(TmuxServer::named("t"), host)),
        );
        let local: Arc<dyn PaneBackendExecutor> =
            Arc::new(crate::in_process::InProcessBackend::new());
        Hosted::new(local, hosts)
    }

    fn calls_made(dir: &std::path::Path) -> usize {
        std::fs::read_to_string(dir.join("calls"))
            .unwrap_or_default()
            .lines()
            .count()
    }

    /// A host behind a partition: the first look pays its deadline and
    /// finds it unreachable; the looks after it, for [`RETRY_AFTER`], ask
    /// nothing and say the same.
    #[tokio::test]
    async fn a_host_that_does_not_answer_is_asked_once_then_rests() {
        let dir = tempfile::tempdir().unwrap();
        let hosted = partitioned(dir.path());
        let pane = PaneRef::new(PaneId::new("box:%1"), "n");
        for _ in 0..3 {
            let st = hosted.status(std::slice::from_ref(&pane)).await.unwrap();
            assert_eq!(
                st,
                [(PaneId::new("box:%1"), PaneStatus::Running { pid: None })]
            );
            assert!(hosted.unreachable("box").is_some());
        }
        assert_eq!(calls_made(dir.path()), 1, "asked once, then resting");
    }

    /// With notes, a host one process found not answering is unreachable
    /// at once for another (a fresh `swarm status` beside the lead), since
    /// the first one's time, without asking it; once the host answers
    /// the note goes.
    #[tokio::test]
    async fn a_host_noted_away_by_one_process_is_away_for_the_next_without_asking() {
        let dir = tempfile::tempdir().unwrap();
        let notes = dir.path().join("away");
        std::fs::create_dir(&notes).unwrap();
        let pane = PaneRef::new(PaneId::new("box:%1"), "n");
        let first = partitioned(dir.path()).noting_in(notes.clone());
        first.status(std::slice::from_ref(&pane)).await.unwrap();
        let (since, why) = first.unreachable("box").expect("away");
        assert!(notes.join("box.away").is_file(), "noted");
        let second = partitioned(dir.path()).noting_in(notes.clone());
        let st = second.status(std::slice::from_ref(&pane)).await.unwrap();
        assert_eq!(
            st,
            [(PaneId::new("box:%1"), PaneStatus::Running { pid: None })]
        );
        let (since2, why2) = second.unreachable("box").expect("away by the note");
        assert_eq!(calls_made(dir.path()), 1, "the second did not ask");
        let ms =
            |t: std::time::SystemTime| t.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
        assert_eq!(
            (ms(since2), why2),
            (ms(since), why),
            "the first one's time and reason"
        );
        first.note("box", None);
        assert!(!notes.join("box.away").exists(), "answered: the note goes");
        let third = partitioned(dir.path()).noting_in(notes);
        third.status(std::slice::from_ref(&pane)).await.unwrap();
        assert_eq!(calls_made(dir.path()), 2, "no note: asked");
    }
}
