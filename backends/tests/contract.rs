//! The backend contract suite: one set of test functions run against tmux on
//! a private server, the in-process backend and the fake, plus live tests of
//! what only one backend does (tmux layout and styling, in-process terminal
//! queries). Needs the `fake` feature.
//!
//! tmux tests never touch the user's server: each starts its own
//! (`tmux -S <tmpdir>/sock -f /dev/null`, `TMUX`/`TMUX_PANE` removed) with a
//! canary session that must survive every kill, and kills it on drop. When
//! tmux is missing they print `SKIP` — or fail if `SWARM_REQUIRE_TMUX=1`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use swarm_backends::fake::{FakeBackend, FakeSignal};
use swarm_backends::in_process::InProcessBackend;
use swarm_backends::tmux::{TmuxBackend, TmuxServer};
use swarm_backends::{PaneBackendExecutor, PaneId, PaneStatus, Placement, SpawnSpec};

const WAIT: Duration = Duration::from_secs(10);

/// Polls `probe` until it yields `Ok`, or panics naming what was awaited and
/// the last thing seen.
async fn wait_until<T>(what: &str, mut probe: impl AsyncFnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        match probe().await {
            Ok(v) => return v,
            Err(seen) if Instant::now() >= deadline => {
                panic!("timed out after {WAIT:?} waiting for {what}; last seen: {seen}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

async fn status_of(b: &dyn PaneBackendExecutor, pane: &PaneId) -> PaneStatus {
    let all = b.status(std::slice::from_ref(pane)).await.expect("status");
    assert_eq!(all.len(), 1);
    assert_eq!(&all[0].0, pane);
    all[0].1
}

async fn wait_status(
    b: &dyn PaneBackendExecutor,
    pane: &PaneId,
    what: &str,
    ok: impl Fn(&PaneStatus) -> bool,
) -> PaneStatus {
    wait_until(what, async || {
        let s = status_of(b, pane).await;
        if ok(&s) { Ok(s) } else { Err(format!("{s:?}")) }
    })
    .await
}

async fn wait_file(path: &Path) -> String {
    wait_until(&format!("file {}", path.display()), async || {
        std::fs::read_to_string(path).map_err(|e| e.to_string())
    })
    .await
}

fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks existence.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// A private tmux server, killed on drop.
struct PrivateTmux {
    dir: tempfile::TempDir,
    sock: PathBuf,
}

impl PrivateTmux {
    /// Starts a server with a `canary` session and a 200x50 `lead` session;
    /// `None` (after printing SKIP) when tmux is missing.
    fn start(test: &str) -> Option<Self> {
        let found = std::process::Command::new("tmux").arg("-V").output().is_ok();
        if !found {
            if std::env::var("SWARM_REQUIRE_TMUX").as_deref() == Ok("1") {
                panic!("{test}: tmux not found and SWARM_REQUIRE_TMUX=1");
            }
            println!("SKIP {test}: tmux not found");
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let sock = dir.path().join("sock");
        let t = Self { dir, sock };
        t.run(&["new-session", "-d", "-s", "canary", "-x", "80", "-y", "24", "--", "sleep", "100000"]);
        t.run(&["new-session", "-d", "-s", "lead", "-x", "200", "-y", "50", "--", "sleep", "100000"]);
        Some(t)
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut c = std::process::Command::new("tmux");
        c.arg("-S").arg(&self.sock).args(["-f", "/dev/null"]).args(args);
        c.env_remove("TMUX").env_remove("TMUX_PANE");
        c
    }

    /// Runs a tmux command on this server; panics with stderr on failure.
    fn run(&self, args: &[&str]) -> String {
        let out = self.command(args).output().expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn server(&self) -> TmuxServer {
        TmuxServer {
            socket: Some(self.sock.clone()),
            config: Some("/dev/null".into()),
        }
    }

    fn lead_pane(&self) -> PaneId {
        PaneId::new(self.run(&["display-message", "-p", "-t", "=lead:", "#{pane_id}"]).trim())
    }

    /// The canary session and its process are still alive.
    fn assert_canary(&self) {
        let pid = self.run(&["display-message", "-p", "-t", "=canary:", "#{pane_pid} #{pane_dead}"]);
        let mut f = pid.split_whitespace();
        let pid: i32 = f.next().and_then(|p| p.parse().ok()).expect("canary pid");
        assert_eq!(f.next(), Some("0"), "canary pane died");
        // SAFETY: signal 0 only checks existence.
        assert_eq!(unsafe { libc::kill(pid, 0) }, 0, "canary process {pid} died");
    }

    /// Every pane's capture, for failure reports.
    fn dump(&self) -> String {
        self.command(&["list-panes", "-a", "-F", "#{pane_id} #{pane_pid} #{pane_dead} #{pane_title}"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }
}

impl Drop for PrivateTmux {
    fn drop(&mut self) {
        let _ = self.command(&["kill-server"]).output();
    }
}

/// One backend under the contract.
trait Harness: Send + Sync {
    fn backend(&self) -> &dyn PaneBackendExecutor;
    fn placement(&self) -> Placement;
    fn dir(&self) -> &Path;
    /// The fake, whose panes run nothing: tests script and observe it.
    fn fake(&self) -> Option<&FakeBackend> {
        None
    }
    /// Kills the whole server behind the backend's back; false if the
    /// backend has no such thing.
    fn kill_server(&self) -> bool;
    /// Checks done after every test (the tmux canary).
    fn after(&self) {}

    fn spec(&self, program: &str, args: &[&str]) -> SpawnSpec {
        SpawnSpec::new(program, args.iter().copied(), self.dir())
            .env("PATH", "/usr/bin:/bin")
            .title("contract")
            .color("purple")
            .placement(self.placement())
    }
}

struct TmuxHarness {
    tmux: PrivateTmux,
    backend: TmuxBackend,
    lead: PaneId,
}

impl TmuxHarness {
    fn start(test: &str) -> Option<Self> {
        let tmux = PrivateTmux::start(test)?;
        let backend = TmuxBackend::new(tmux.server());
        let lead = tmux.lead_pane();
        Some(Self {
            tmux,
            backend,
            lead,
        })
    }
}

impl Harness for TmuxHarness {
    fn backend(&self) -> &dyn PaneBackendExecutor {
        &self.backend
    }
    fn placement(&self) -> Placement {
        Placement::RightOfLead {
            lead: self.lead.clone(),
        }
    }
    fn dir(&self) -> &Path {
        self.tmux.dir.path()
    }
    fn kill_server(&self) -> bool {
        self.tmux.run(&["kill-server"]);
        true
    }
    fn after(&self) {
        self.tmux.assert_canary();
    }
}

struct InProcessHarness {
    dir: tempfile::TempDir,
    backend: InProcessBackend,
}

impl Harness for InProcessHarness {
    fn backend(&self) -> &dyn PaneBackendExecutor {
        &self.backend
    }
    fn placement(&self) -> Placement {
        Placement::NewWindow { session: None }
    }
    fn dir(&self) -> &Path {
        self.dir.path()
    }
    fn kill_server(&self) -> bool {
        false
    }
}

struct FakeHarness {
    dir: tempfile::TempDir,
    backend: FakeBackend,
}

impl Harness for FakeHarness {
    fn backend(&self) -> &dyn PaneBackendExecutor {
        &self.backend
    }
    fn placement(&self) -> Placement {
        Placement::NewWindow { session: None }
    }
    fn dir(&self) -> &Path {
        self.dir.path()
    }
    fn fake(&self) -> Option<&FakeBackend> {
        Some(&self.backend)
    }
    fn kill_server(&self) -> bool {
        self.backend.vanish_all();
        true
    }
}

// ---- the contract ----------------------------------------------------------

/// Arguments that a shell or tmux would mangle arrive unchanged.
async fn argv_arrives_unchanged(h: &dyn Harness) {
    let out = h.dir().join("args.txt");
    let tricky = [
        "plain",
        "with space",
        "it's \"quoted\"",
        ";",
        "ends;",
        "back\\;",
        "$(touch pwned)",
        "`touch pwned2`",
        "ünïcödé ✳ 日本",
        "",
        "-e",
        "#{pane_id}",
        "--",
        "tab\there",
    ];
    let script = r#"printf '%s\n' "$@" > "$0.tmp" && mv "$0.tmp" "$0""#;
    let mut args = vec!["-c", script, out.to_str().unwrap()];
    args.extend(tricky);
    let spec = h.spec("sh", &args);
    let pane = h.backend().spawn(&spec).await.expect("spawn");
    let seen: Vec<String> = match h.fake() {
        Some(fake) => fake.spec(&pane).expect("recorded").args[3..].to_vec(),
        None => wait_file(&out).await.lines().map(String::from).collect(),
    };
    assert_eq!(seen, tricky, "argv changed on the way");
    assert!(!h.dir().join("pwned").exists() && !h.dir().join("pwned2").exists());
    h.backend().kill(&pane, Duration::from_secs(1)).await.expect("kill");
}

/// The pane's process sees exactly the spec's environment.
async fn env_is_exact(h: &dyn Harness) {
    let spec = h
        .spec("sleep", &["1000"])
        .env("SWARM_CONTRACT", "v a;l $(x)")
        .env("EMPTY", "");
    let pane = h.backend().spawn(&spec).await.expect("spawn");
    let expected: Vec<String> = spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let seen: Vec<String> = match h.fake() {
        Some(fake) => {
            let s = fake.spec(&pane).expect("recorded");
            s.env.iter().map(|(k, v)| format!("{k}={v}")).collect()
        }
        None => {
            let status = wait_status(h.backend(), &pane, "a running pane", |s| {
                matches!(s, PaneStatus::Running { .. })
            })
            .await;
            let PaneStatus::Running { pid: Some(pid) } = status else {
                panic!("a real backend must report a pid: {status:?}");
            };
            // The environment the process was exec'd with, exactly.
            let environ = wait_until("sleep to be exec'd", async || {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).map_err(|e| e.to_string())?;
                if !cmdline.starts_with(b"sleep\0") {
                    return Err(String::from_utf8_lossy(&cmdline).into_owned());
                }
                std::fs::read(format!("/proc/{pid}/environ")).map_err(|e| e.to_string())
            })
            .await;
            environ
                .split(|b| *b == 0)
                .filter(|v| !v.is_empty())
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect()
        }
    };
    assert_eq!(seen, expected, "environment is not exact");
    for leaked in ["HOME", "TMUX", "TMUX_PANE", "CARGO_MANIFEST_DIR", "TERM"] {
        assert!(!seen.iter().any(|v| v.starts_with(&format!("{leaked}="))), "{leaked} leaked");
    }
    h.backend().kill(&pane, Duration::from_secs(1)).await.expect("kill");
}

/// The pane starts in the spec's working directory.
async fn cwd_is_used(h: &dyn Harness) {
    let cwd = h.dir().join("work dir ünï #1");
    std::fs::create_dir_all(&cwd).unwrap();
    let out = h.dir().join("pwd.txt");
    let mut spec = h.spec("sh", &["-c", r#"pwd -P > "$0.tmp" && mv "$0.tmp" "$0""#, out.to_str().unwrap()]);
    spec.cwd = cwd.clone();
    let pane = h.backend().spawn(&spec).await.expect("spawn");
    let seen = match h.fake() {
        Some(fake) => fake.spec(&pane).expect("recorded").cwd,
        None => PathBuf::from(wait_file(&out).await.trim_end()),
    };
    assert_eq!(seen, cwd.canonicalize().unwrap());
    h.backend().kill(&pane, Duration::from_secs(1)).await.expect("kill");
}

/// Running with a pid, then Exited with the process's exit code.
async fn status_running_then_exited_with_code(h: &dyn Harness) {
    let go = h.dir().join("go");
    let spec = h.spec(
        "sh",
        &["-c", r#"while [ ! -e "$0" ]; do sleep 0.01; done; exit 7"#, go.to_str().unwrap()],
    );
    let pane = h.backend().spawn(&spec).await.expect("spawn");
    let running = status_of(h.backend(), &pane).await;
    match (running, h.fake()) {
        (PaneStatus::Running { pid: None }, Some(_)) => {}
        (PaneStatus::Running { pid: Some(pid) }, None) => assert!(pid > 1),
        other => panic!("expected Running, got {other:?}"),
    }
    match h.fake() {
        Some(fake) => fake.exit(&pane, Some(7)),
        None => std::fs::write(&go, b"").unwrap(),
    }
    wait_status(h.backend(), &pane, "Exited { code: Some(7) }", |s| {
        *s == PaneStatus::Exited { code: Some(7) }
    })
    .await;
    h.backend().kill(&pane, Duration::from_secs(1)).await.expect("kill an exited pane");
    assert_eq!(status_of(h.backend(), &pane).await, PaneStatus::Gone);
}

/// A process that ignores SIGTERM is gone after the ladder, with its group.
async fn kill_escalates_past_a_sigterm_trap(h: &dyn Harness) {
    let ready = h.dir().join("ready");
    let script = r#"trap '' TERM; sleep 1000 & echo "$!" > "$0.tmp"; mv "$0.tmp" "$0"; wait; sleep 1000"#;
    let spec = h.spec("sh", &["-c", script, ready.to_str().unwrap()]);
    let pane = h.backend().spawn(&spec).await.expect("spawn");
    let grace = Duration::from_millis(300);
    match h.fake() {
        Some(fake) => {
            fake.set_stubborn(&pane, true);
            let t = Instant::now();
            h.backend().kill(&pane, grace).await.expect("kill");
            assert!(t.elapsed() >= grace);
            assert_eq!(fake.signals(&pane), [FakeSignal::Term, FakeSignal::Kill]);
        }
        None => {
            let child: i32 = wait_file(&ready).await.trim().parse().expect("child pid");
            let PaneStatus::Running { pid: Some(pid) } = status_of(h.backend(), &pane).await else {
                panic!("not running");
            };
            let t = Instant::now();
            h.backend().kill(&pane, grace).await.expect("kill");
            assert!(t.elapsed() >= grace, "SIGTERM should have been ignored");
            assert!(!group_alive(pid as i32), "process group {pid} survived");
            // SAFETY: signal 0 only checks existence.
            assert_ne!(unsafe { libc::kill(child, 0) }, 0, "background child {child} survived");
        }
    }
    assert_eq!(status_of(h.backend(), &pane).await, PaneStatus::Gone);
}

/// A polite process goes at SIGTERM, well within the grace period.
async fn kill_is_quick_for_a_polite_process(h: &dyn Harness) {
    let pane = h.backend().spawn(&h.spec("sleep", &["1000"])).await.expect("spawn");
    wait_status(h.backend(), &pane, "running", |s| matches!(s, PaneStatus::Running { .. })).await;
    let t = Instant::now();
    h.backend().kill(&pane, Duration::from_secs(5)).await.expect("kill");
    assert!(t.elapsed() < Duration::from_secs(3), "took {:?}", t.elapsed());
    if let Some(fake) = h.fake() {
        assert_eq!(fake.signals(&pane), [FakeSignal::Term]);
    }
    assert_eq!(status_of(h.backend(), &pane).await, PaneStatus::Gone);
    // Killing a gone pane is fine.
    h.backend().kill(&pane, Duration::from_secs(1)).await.expect("kill again");
}

/// `capture` shows what the program printed.
async fn capture_shows_printed_text(h: &dyn Harness) {
    let spec = h.spec("sh", &["-c", "printf 'hello from %s\\n' pane-canary-7; exec sleep 1000"]);
    let pane = h.backend().spawn(&spec).await.expect("spawn");
    if let Some(fake) = h.fake() {
        fake.set_screen(&pane, "hello from pane-canary-7\n");
    }
    wait_until("the greeting on screen", async || {
        let text = h.backend().capture(&pane).await.map_err(|e| e.to_string())?;
        if text.contains("hello from pane-canary-7") { Ok(()) } else { Err(text) }
    })
    .await;
    h.backend().kill(&pane, Duration::from_secs(1)).await.expect("kill");
}

/// Panes are Gone once killed, and all of them once the server dies.
async fn gone_after_kill_and_server_death(h: &dyn Harness) {
    let a = h.backend().spawn(&h.spec("sleep", &["1000"])).await.expect("spawn a");
    let b = h.backend().spawn(&h.spec("sleep", &["1000"])).await.expect("spawn b");
    h.backend().kill(&a, Duration::from_secs(1)).await.expect("kill");
    let both = h.backend().status(&[a.clone(), b.clone()]).await.expect("status");
    assert_eq!(both[0], (a.clone(), PaneStatus::Gone));
    assert!(matches!(both[1].1, PaneStatus::Running { .. }), "{both:?}");
    let unknown = PaneId::new(if h.fake().is_some() { "fake-999" } else { "%999" });
    assert_eq!(status_of(h.backend(), &unknown).await, PaneStatus::Gone);
    if h.kill_server() {
        assert_eq!(status_of(h.backend(), &b).await, PaneStatus::Gone);
    } else {
        h.backend().kill(&b, Duration::from_secs(1)).await.expect("kill b");
    }
}

/// Unsupported operations say so; supported ones work.
async fn capabilities_are_honest(h: &dyn Harness) {
    let caps = h.backend().capabilities();
    let pane = h.backend().spawn(&h.spec("sleep", &["1000"])).await.expect("spawn");
    let b = h.backend();
    for (supported, result) in [
        (caps.focus, b.focus(&pane).await),
        (caps.set_title, b.set_title(&pane, "renamed").await),
        (caps.set_color, b.set_color(&pane, "green").await),
        (caps.rebalance, b.rebalance().await),
    ] {
        match result {
            Ok(()) => assert!(supported),
            Err(swarm_backends::BackendError::Unsupported { .. }) => assert!(!supported),
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
    b.kill(&pane, Duration::from_secs(1)).await.expect("kill");
}

macro_rules! contract {
    ($($test:ident),* $(,)?) => {
        mod tmux_contract {
            use super::Harness;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    let Some(h) = super::TmuxHarness::start(stringify!($test)) else { return };
                    let dump = h.tmux.dump();
                    super::$test(&h).await;
                    if stringify!($test) != "gone_after_kill_and_server_death" {
                        h.after();
                    }
                    let _ = dump;
                }
            )*
        }
        mod in_process_contract {
            use super::Harness;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    let h = super::InProcessHarness {
                        dir: tempfile::tempdir().unwrap(),
                        backend: swarm_backends::in_process::InProcessBackend::new(),
                    };
                    super::$test(&h).await;
                    h.after();
                }
            )*
        }
        mod fake_contract {
            use super::Harness;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    let h = super::FakeHarness {
                        dir: tempfile::tempdir().unwrap(),
                        backend: swarm_backends::fake::FakeBackend::new(),
                    };
                    super::$test(&h).await;
                    h.after();
                }
            )*
        }
    };
}

contract!(
    argv_arrives_unchanged,
    env_is_exact,
    cwd_is_used,
    status_running_then_exited_with_code,
    kill_escalates_past_a_sigterm_trap,
    kill_is_quick_for_a_polite_process,
    capture_shows_printed_text,
    gone_after_kill_and_server_death,
    capabilities_are_honest,
);
