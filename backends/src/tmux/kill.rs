//! The steps of the tmux backend's `kill_all`: sort the panes asked for
//! (not there, not ours, to kill), find each one's process group, run the
//! signal ladder on all the groups at once, close the panes in one chained
//! call, and wait (with a deadline) until they and their processes are gone.

use std::time::Duration;

use super::{TmuxBackend, commands, panes};
use crate::PaneRef;
use crate::error::{BackendError, Result};

/// How many chained `kill-pane` calls [`TmuxBackend::close_rows`] makes
/// before it closes what is left one pane at a time.
const CHAIN_TRIES: usize = 3;

/// Per pane asked for: its result once known (`None`: still to kill).
type Outcomes = Vec<Option<Result<()>>>;

/// The panes to kill, each with its index among the panes asked for.
type Targets = Vec<(usize, panes::PaneRow)>;

impl TmuxBackend {
    /// `kill_all` once the server's panes are listed in `rows`.
    pub(super) async fn kill_listed(
        &self,
        panes: &[PaneRef],
        rows: &[panes::PaneRow],
        grace: Duration,
    ) -> Vec<Result<()>> {
        let (mut out, targets) = sort_targets(panes, rows);
        let groups = self.target_groups(&targets, &mut out).await;
        let pgids: Vec<i32> = groups.iter().map(|(_, g)| *g).collect();
        let pids: Vec<u32> = targets.iter().map(|(_, r)| r.pid).collect();
        let ladders = self.ladder(&pgids, &pids, grace).await;
        for ((i, _), ladder) in groups.iter().zip(ladders) {
            if let Err(reason) = ladder {
                out[*i] = Some(Err(BackendError::KillFailed {
                    pane: panes[*i].id.clone(),
                    reason,
                }));
            }
        }
        let closing: Vec<&panes::PaneRow> = targets
            .iter()
            .filter(|(i, _)| out[*i].is_none())
            .map(|(_, r)| r)
            .collect();
        if !closing.is_empty() {
            let off = self.close_rows(&closing).await;
            self.await_closed(&closing, &targets, &mut out, off).await;
        }
        out.into_iter().map(|r| r.unwrap_or(Ok(()))).collect()
    }

    /// The process group of each target still alive, with its index; a
    /// target whose group cannot be found gets its error in `out`.
    async fn target_groups(&self, targets: &Targets, out: &mut Outcomes) -> Vec<(usize, i32)> {
        let mut groups: Vec<(usize, i32)> = Vec::new();
        for (i, row) in targets {
            let pgid = if row.dead {
                let pgid = row.pid as i32;
                self.group_alive(pgid).await.then_some(pgid)
            } else {
                match self.group_leader(&row.pane, row.pid).await {
                    Ok(g) => g,
                    Err(e) => {
                        out[*i] = Some(Err(e));
                        continue;
                    }
                }
            };
            if let Some(g) = pgid {
                groups.push((*i, g));
            }
        }
        groups
    }

    /// Closes the panes in one chained call. Where that fails, one of them
    /// closed meanwhile (the lead closing the same panes as `swarm down`)
    /// and the chain stopped there: the panes still listed with the same
    /// mark are chained again (up to [`CHAIN_TRIES`] calls), and only then
    /// closed one by one (a `down` of 32 racing its lead ran 32 clients).
    /// A pane that is already gone is fine: [`Self::await_closed`] checks
    /// what is left. True when every pane is known to be off the server
    /// (each closed by a chain that ran whole, or no longer listed): a
    /// `kill-pane` that ran has taken its pane off before the call returns.
    async fn close_rows(&self, closing: &[&panes::PaneRow]) -> bool {
        let mut left: Vec<&panes::PaneRow> = closing.to_vec();
        let mut off = false;
        for _ in 0..CHAIN_TRIES {
            if left.is_empty() || self.kill_chained(&left).await {
                left.clear();
                off = true;
                break;
            }
            let Ok(listed) = self.rows().await else {
                break;
            };
            left.retain(|r| listed.iter().any(|l| l.pane == r.pane && l.mark == r.mark));
        }
        for r in left {
            // Deliberate ignore: `await_closed` checks what is left.
            let _ = self.kill_chained(&[r]).await;
        }
        let mut state = self.state.lock().await;
        for r in closing {
            state.hidden.remove(&r.pane);
        }
        off
    }

    /// `kill-pane` of each row, in one tmux call; true when every one ran.
    async fn kill_chained(&self, rows: &[&panes::PaneRow]) -> bool {
        let cmds: Vec<Vec<String>> = rows
            .iter()
            .filter_map(|r| panes::kill_pane(&r.pane).ok())
            .collect();
        match commands::chain(cmds) {
            Ok(argv) => self
                .invocation(argv)
                .output()
                .await
                .is_ok_and(|o| o.success()),
            Err(_) => false,
        }
    }

    /// Waits (2 s at most) until every closed pane is off the server and
    /// its process dead; each one still there gets a `KillFailed` in `out`.
    /// `off`: every pane is known to be off the server already, so the
    /// first look checks only the processes (no listing: in a `down`, one
    /// tmux call less, behind a server busy with the panes just closed).
    async fn await_closed(
        &self,
        closing: &[&panes::PaneRow],
        targets: &Targets,
        out: &mut Outcomes,
        off: bool,
    ) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        let mut known_off = off;
        loop {
            let listed = if std::mem::take(&mut known_off) {
                Vec::new()
            } else {
                self.rows().await.unwrap_or_default()
            };
            let mut left: Vec<&&panes::PaneRow> = Vec::new();
            for r in closing {
                if listed.iter().any(|l| l.pane == r.pane) || self.alive(r.pid).await {
                    left.push(r);
                }
            }
            if left.is_empty() {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                for r in left {
                    if let Some((i, _)) = targets.iter().find(|(_, t)| t.pane == r.pane) {
                        out[*i] = Some(Err(BackendError::KillFailed {
                            pane: r.pane.clone(),
                            reason: format!(
                                "after the ladder the pane or pid {} is still there ({})",
                                r.pid,
                                self.describe(r.pid).await
                            ),
                        }));
                    }
                }
                return;
            }
            let pids: Vec<u32> = left.iter().map(|r| r.pid).collect();
            self.reap_lost_children(&pids).await;
            tokio::time::sleep(self.poll()).await;
        }
    }
}

/// Sorts the panes asked for: a bad id is its error, a pane not listed is
/// already gone (done), a pane without its mark is not ours (refused); the
/// rest are the targets, their results still open.
fn sort_targets(panes: &[PaneRef], rows: &[panes::PaneRow]) -> (Outcomes, Targets) {
    let mut out: Outcomes = Vec::with_capacity(panes.len());
    let mut targets: Targets = Vec::new();
    for (i, pane) in panes.iter().enumerate() {
        match (
            commands::check_pane_id(&pane.id),
            rows.iter().find(|r| r.pane == pane.id),
        ) {
            (Err(e), _) => out.push(Some(Err(e))),
            (Ok(_), None) => out.push(Some(Ok(()))),
            (Ok(_), Some(r)) if !r.carries(&pane.nonce) => {
                out.push(Some(Err(BackendError::NotOurs {
                    pane: pane.id.clone(),
                })))
            }
            (Ok(_), Some(r)) => {
                out.push(None);
                targets.push((i, r.clone()));
            }
        }
    }
    (out, targets)
}

#[cfg(test)]
mod tests {
    use super::super::place::{recording_backend, runs, tmux_server};
    use crate::{PaneBackendExecutor, PaneId, Placement, SpawnSpec};
    use std::time::Duration;

    /// Several zombies at once (a `down`'s runtimes that just ended) cost
    /// the server one poke, not one each: its wait loop reaps them all.
    /// The zombies here are this test's own children (the server cannot
    /// reap them, so each look still finds them): what is counted is the
    /// pokes, and a process that is no zombie is never a reason for one.
    #[tokio::test]
    async fn several_zombies_are_reaped_with_one_poke() {
        if !tmux_server::tmux_available("several_zombies_are_reaped_with_one_poke") {
            return;
        }
        let tmux = tmux_server::TmuxServer::start();
        tmux.new_session("lead", (200, 50), &["sleep", "100000"]);
        let (backend, log) = recording_backend(&tmux);
        let mut children: Vec<std::process::Child> = (0..3)
            .map(|_| {
                std::process::Command::new("true")
                    .spawn()
                    .expect("spawning true")
            })
            .collect();
        let pids: Vec<u32> = children.iter().map(std::process::Child::id).collect();
        let deadline = crate::command::timeouts::Deadline::after(crate::command::timeouts::WAIT);
        while !pids
            .iter()
            .all(|&p| crate::process::is_zombie(p) == Some(true))
        {
            assert!(!deadline.passed(), "the children never ended");
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut live = std::process::Command::new("sleep")
            .arg("100000")
            .spawn()
            .expect("spawning sleep");
        backend.reap_lost_children(&[live.id()]).await;
        let for_live = runs(&log, "run-shell");
        let mut with_live = vec![live.id()];
        with_live.extend(&pids);
        backend.reap_lost_children(&with_live).await;
        let for_all = runs(&log, "run-shell") - for_live;
        // Ended before the asserts, so that a failure leaves nothing running.
        live.kill().expect("killing sleep");
        live.wait().expect("reaping sleep");
        for c in &mut children {
            c.wait().expect("reaping the child");
        }
        assert_eq!(for_live, 0, "a live process is no zombie");
        assert_eq!(
            for_all,
            1,
            "one poke for three zombies:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// The lead closing some of the panes `swarm down` closes: the chain
    /// stops at the first one gone, and the rest are chained again, not
    /// closed one client at a time.
    #[tokio::test]
    async fn a_chain_broken_by_a_pane_closed_meanwhile_is_chained_again() {
        if !tmux_server::tmux_available("a_chain_broken_by_a_pane_closed_meanwhile") {
            return;
        }
        let tmux = tmux_server::TmuxServer::start();
        let lead = PaneId::new(tmux.new_session("lead", (200, 50), &["sleep", "100000"]));
        let (backend, log) = recording_backend(&tmux);
        let mut mine = Vec::new();
        for _ in 0..6 {
            let spec = SpawnSpec::new("sleep", ["100000"], tmux.dir.path())
                .env("PATH", "/usr/bin:/bin")
                .placement(Placement::RightOfLead { lead: lead.clone() });
            mine.push(backend.spawn(&spec).await.expect("spawn").id);
        }
        let rows = backend.rows().await.expect("listing");
        let closing: Vec<&super::panes::PaneRow> = mine
            .iter()
            .map(|p| rows.iter().find(|r| &r.pane == p).expect("listed"))
            .collect();
        // Closed by someone else after the listing: first and fourth.
        for gone in [&mine[0], &mine[3]] {
            tmux.ok(&["kill-pane", "-t", gone.as_str()]);
        }
        let before = runs(&log, "kill-pane");
        backend.close_rows(&closing).await;
        let ran = runs(&log, "kill-pane") - before;
        assert!(
            ran <= 3,
            "{ran} clients for 6 panes:\n{}",
            std::fs::read_to_string(&log).unwrap()
        );
        let left = backend.rows().await.expect("listing");
        for p in &mine {
            assert!(
                left.iter().all(|r| &r.pane != p),
                "{p} still there: {}",
                tmux.dump()
            );
        }
        assert!(left.iter().any(|r| r.pane == lead), "the lead's pane lives");
    }

    /// A team's own server exits with the lead's pane, its last: the lead,
    /// ending just then, is left a zombie to whatever adopts it, which may
    /// reap it late or never (a container's init; here a subreaper that
    /// does not reap). No tmux server can reap it any more: `await_ended`
    /// takes it as ended after one poke finds no server, where it poked
    /// every 10 ms to its deadline (2 s in each `swarm down` there).
    #[tokio::test]
    async fn a_zombie_whose_server_is_gone_has_ended_after_one_poke() {
        use std::io::Write;
        use std::os::unix::process::CommandExt;
        if !tmux_server::tmux_available("a_zombie_whose_server_is_gone_has_ended") {
            return;
        }
        let dir = tempfile::Builder::new()
            .prefix("swarm-tmux-")
            .tempdir()
            .expect("tempdir");
        let sock = dir.path().join("sock");
        // The adopter starts the server (so that it is the server's
        // nearest subreaper), then waits on its input without reaping;
        // the command after `read` reaps what it adopted. The lead
        // outlives its server (it ignores the hang-up) and ends once told,
        // so that no server is there to reap it (or after a minute, should
        // the test fail before telling it).
        let go = dir.path().join("go");
        let lead_command = format!(
            "trap '' HUP; i=0; while [ ! -e '{}' ] && [ $i -lt 6000 ]; do sleep 0.01; i=$((i+1)); done",
            go.display()
        );
        let mut adopter = std::process::Command::new("sh");
        adopter
            .args([
                "-c",
                "tmux -S \"$1\" -f /dev/null new-session -d -s lead \"$2\" \
                 && echo started && read -r _ && exec true",
                "sh",
            ])
            .arg(&sock)
            .arg(&lead_command)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        // SAFETY: prctl is async-signal-safe; nothing else runs between
        // the fork and the exec.
        unsafe {
            adopter.pre_exec(|| {
                if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
        let mut adopter = adopter.spawn().expect("spawning the adopter");
        let mut started = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(adopter.stdout.take().expect("stdout")),
            &mut started,
        )
        .expect("reading the adopter");
        assert_eq!(
            started.trim(),
            "started",
            "the adopter's server did not start"
        );
        let tmux = tmux_server::TmuxServer { dir, sock };
        let lead = tmux.panes().first().expect("the lead's pane").pid;
        let server = tmux.server_pid();
        assert_eq!(
            crate::process::Stat::of(server).map(|s| s.ppid),
            Some(adopter.id()),
            "the server is the adopter's"
        );
        tmux.ok(&["kill-server"]);
        let adopted = |zombie: bool| {
            let deadline =
                crate::command::timeouts::Deadline::after(crate::command::timeouts::WAIT);
            while !crate::process::Stat::of(lead)
                .is_some_and(|s| s.is_zombie() == zombie && s.ppid == adopter.id())
            {
                assert!(
                    !deadline.passed(),
                    "the lead never became the adopter's (zombie: {zombie}): {}",
                    crate::process::describe(lead)
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        adopted(false);
        std::fs::write(&go, "").expect("telling the lead to end");
        adopted(true);
        let (backend, log) = recording_backend(&tmux);
        backend.await_ended(lead, Duration::from_secs(3)).await;
        let pokes = runs(&log, "run-shell");
        let still = crate::process::is_zombie(lead);
        // The adopter reaps what it adopted and ends.
        let mut input = adopter.stdin.take().expect("stdin");
        input.write_all(b"\n").expect("telling the adopter to end");
        drop(input);
        adopter.wait().expect("reaping the adopter");
        assert_eq!(still, Some(true), "the case: a zombie nothing reaped");
        assert_eq!(
            pokes,
            1,
            "one poke to learn there is no server:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }
}
