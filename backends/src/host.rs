//! Where a pane's processes run (DESIGN §13): this machine, or another one
//! reached with OpenSSH.
//!
//! A remote host is driven by the user's own `ssh` (the first on `PATH`, with
//! the user's `~/.ssh/config`: swarm passes no `-F`), in batch mode (never a
//! password prompt in a pane), over one shared connection per host (a
//! ControlMaster socket in a directory the caller owns, typically the team's
//! state), and every call has its own deadline: a host whose sshd accepts and
//! then never answers (a network partition) costs a caller [`SshHost::timeout`]
//! at most, never a hang.
//!
//! A remote command is argv, as everywhere in swarm: each word is quoted for
//! the remote account's shell ([`quote_word`]; `ssh` joins its arguments into
//! one string that shell reads), so nothing in a name, a path or a prompt is
//! ever read as shell syntax there. The remote login shell must be a POSIX
//! one (sh, dash, bash, zsh, ksh).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::command::{Invocation, Output};
use crate::error::{BackendError, Result};
use crate::process::{LadderOutcome, Stat};

/// The name of this machine in a spec (`host = "local"`).
pub const LOCAL: &str = "local";

/// How long one call to a remote host may take by default (connecting
/// included), before it is killed and reported.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the shared connection outlives its last use.
const CONTROL_PERSIST_SECS: u64 = 60;

/// Longest socket path the kernel takes (`sun_path` is 108 bytes on Linux,
/// 104 on macOS), less room for the NUL and ssh's temporary suffix.
const SOCKET_PATH_MAX: usize = 90;

/// Where a pane's processes run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Host {
    /// This machine.
    Local,
    /// Another machine, over ssh.
    Ssh(SshHost),
}

impl Host {
    /// The host's name: [`LOCAL`] or the spec's name for it.
    pub fn name(&self) -> &str {
        match self {
            Host::Local => LOCAL,
            Host::Ssh(h) => &h.name,
        }
    }
}

/// A machine reached with `ssh`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SshHost {
    /// Its name in the spec.
    pub name: String,
    /// Anything `ssh` takes as a destination (`user@box`, an alias of
    /// `~/.ssh/config`, `ssh://user@box:2222`).
    pub destination: String,
    /// The directory of the shared connection's socket; `None`, or a
    /// directory whose path is too long for a socket: one connection a call.
    pub control_dir: Option<PathBuf>,
    /// Each call's deadline, connecting included.
    pub timeout: Duration,
    /// The ssh program: `ssh` (the first on `PATH`) unless told otherwise.
    pub program: String,
}

impl SshHost {
    /// A host with the default timeout and no shared connection. The
    /// destination is checked ([`check_destination`]).
    pub fn new(name: impl Into<String>, destination: impl Into<String>) -> Result<SshHost> {
        let destination = destination.into();
        check_destination(&destination)?;
        Ok(SshHost {
            name: name.into(),
            destination,
            control_dir: None,
            timeout: DEFAULT_TIMEOUT,
            program: "ssh".to_string(),
        })
    }

    /// Runs this program as ssh (a path, or a name looked up on `PATH`).
    pub fn program(mut self, program: impl Into<String>) -> SshHost {
        self.program = program.into();
        self
    }

    /// Shares one connection through a socket in `dir` (created 0700 by the
    /// caller).
    pub fn control_dir(mut self, dir: impl Into<PathBuf>) -> SshHost {
        self.control_dir = Some(dir.into());
        self
    }

    /// Each call's deadline.
    pub fn timeout(mut self, timeout: Duration) -> SshHost {
        self.timeout = timeout;
        self
    }

    /// The shared connection's socket path pattern, when there is one.
    fn control_path(&self) -> Option<String> {
        let dir = self.control_dir.as_deref()?;
        // `%C`: a hash of the destination, 40 hex digits.
        let path = format!("{}/%C", dir.display());
        (path.len() - 2 + 40 <= SOCKET_PATH_MAX && !path.contains(['\n', ' ', '"', '\'']))
            .then_some(path)
    }

    /// Whether calls share one connection ([`SshHost::control_dir`] set and
    /// short enough for a socket path).
    pub fn shares_connection(&self) -> bool {
        self.control_path().is_some()
    }

    /// ssh's own options, before the destination.
    fn options(&self) -> Vec<String> {
        let connect = self.timeout.as_secs().clamp(1, 10);
        let mut o = vec![
            "BatchMode=yes".to_string(),
            format!("ConnectTimeout={connect}"),
            "ServerAliveInterval=5".to_string(),
            "ServerAliveCountMax=2".to_string(),
        ];
        match self.control_path() {
            Some(path) => {
                o.push("ControlMaster=auto".to_string());
                o.push(format!("ControlPath={path}"));
                o.push(format!("ControlPersist={CONTROL_PERSIST_SECS}"));
            }
            None => o.push("ControlPath=none".to_string()),
        }
        o.into_iter().flat_map(|v| ["-o".to_string(), v]).collect()
    }

    /// The `ssh` call that runs `argv` on the host (stdin from /dev/null,
    /// no terminal), with this host's deadline.
    pub fn invocation(&self, argv: &[String]) -> Invocation {
        let mut args = self.options();
        args.push("-T".to_string());
        args.push("--".to_string());
        args.push(self.destination.clone());
        args.push(remote_command(argv));
        let mut inv = Invocation::new(self.program.clone(), args);
        inv.timeout = self.timeout;
        inv
    }

    /// Runs `argv` on the host and returns what it printed, whatever its
    /// exit status; an ssh that cannot connect exits 255.
    pub fn output_blocking(&self, argv: &[String]) -> Result<Output> {
        self.invocation(argv).output_blocking()
    }

    /// [`SshHost::output_blocking`] on tokio's blocking pool.
    pub async fn output(&self, argv: &[String]) -> Result<Output> {
        self.invocation(argv).output().await
    }

    /// Ends the shared connection, if one is up (`ssh -O exit`); quiet when
    /// there is none.
    pub fn close(&self) {
        let Some(path) = self.control_path() else {
            return;
        };
        let args = vec![
            "-o".to_string(),
            format!("ControlPath={path}"),
            "-O".to_string(),
            "exit".to_string(),
            "--".to_string(),
            self.destination.clone(),
        ];
        let mut inv = Invocation::new(self.program.clone(), args);
        inv.timeout = Duration::from_secs(5);
        let _ = inv.output_blocking();
    }
}

/// The processes of a remote host, read and signalled there, never here
/// (DESIGN §13: nothing local is ever signalled for a remote pane). A
/// remote host is a Linux one: liveness is its `/proc/<pid>/stat`, a
/// process named by its pid and start time, as locally.
impl SshHost {
    /// What `/proc/<pid>/stat` says on the host of each of `pids` (`None`:
    /// no such process there), in one call.
    pub async fn stats(&self, pids: &[u32]) -> Result<Vec<Option<Stat>>> {
        if pids.is_empty() {
            return Ok(Vec::new());
        }
        let files: Vec<String> = pids.iter().map(|p| format!("/proc/{p}/stat")).collect();
        // `cat` names each file it cannot read on stderr and goes on; the
        // exit status says only that one was missing.
        let script = format!("cat {} 2>/dev/null; exit 0", files.join(" "));
        let out = self.call(&script, self.timeout).await?;
        let found: Vec<Stat> = out.stdout.lines().filter_map(Stat::parse).collect();
        Ok(pids
            .iter()
            .map(|p| found.iter().find(|s| s.pid == *p).cloned())
            .collect())
    }

    /// The signal ladder on process groups of the host, in one call: SIGTERM
    /// to each, `grace` for all to end, SIGKILL to the survivors, `settle`
    /// for those. One result per group, in order, as
    /// [`crate::process::terminate_groups`] gives them locally.
    pub async fn terminate_groups(
        &self,
        pgids: &[i32],
        grace: Duration,
        settle: Duration,
    ) -> Result<Vec<std::result::Result<LadderOutcome, String>>> {
        if let Some(bad) = pgids.iter().find(|g| **g <= 1) {
            return Err(BackendError::invalid(
                "process group",
                &bad.to_string(),
                "not a group swarm started",
            ));
        }
        if pgids.is_empty() {
            return Ok(Vec::new());
        }
        let groups: Vec<String> = pgids.iter().map(i32::to_string).collect();
        let steps = |d: Duration| (d.as_millis() / 50).max(1);
        // Only numbers reach the script; each line of its output is
        // `<outcome> <group>`. A group is alive while one of its processes
        // is, zombies aside (read from /proc: `kill -0` counts a zombie no
        // one has reaped yet).
        let script = format!(
            "{LIVE_GROUPS}\
             w() {{ n=0; while [ $n -lt $1 ]; do live; l=''; for g in $2; do a $g && l=\"$l $g\"; done; \
             [ -z \"$l\" ] && return; sleep 0.05; n=$((n+1)); done; }}\n\
             live; t=''; for g in {gs}; do if a $g; then kill -s TERM -- \"-$g\" 2>/dev/null; t=\"$t $g\"; \
             else echo gone $g; fi; done\n\
             w {grace} \"$t\"\n\
             live; k=''; for g in $t; do if a $g; then kill -s KILL -- \"-$g\" 2>/dev/null; k=\"$k $g\"; \
             else echo term $g; fi; done\n\
             w {settle} \"$k\"\n\
             live; for g in $k; do if a $g; then echo left $g; else echo kill $g; fi; done\n",
            gs = groups.join(" "),
            grace = steps(grace),
            settle = steps(settle),
        );
        let out = self.call(&script, self.timeout + grace + settle).await?;
        if !out.success() {
            return Err(BackendError::CommandFailed {
                program: "ssh".to_string(),
                argv: vec![self.destination.clone(), "(the signal ladder)".to_string()],
                status: format!("{:?}", out.code),
                stderr: out.stderr.trim().to_string(),
            });
        }
        let said = |g: &str| {
            out.stdout.lines().find_map(|l| {
                let (what, group) = l.split_once(' ')?;
                (group.trim() == g).then_some(what)
            })
        };
        Ok(groups
            .iter()
            .map(|g| match said(g) {
                Some("gone") => Ok(LadderOutcome::AlreadyGone),
                Some("term") => Ok(LadderOutcome::Terminated),
                Some("kill") => Ok(LadderOutcome::Killed),
                Some("left") => Err(format!(
                    "process group {g} on {} still alive {settle:?} after SIGKILL",
                    self.name
                )),
                _ => Err(format!(
                    "the ladder on {} said nothing of group {g}",
                    self.name
                )),
            })
            .collect())
    }

    /// Whether each of `pgids` has a process on the host that is not a
    /// zombie, in one call.
    pub async fn groups_alive(&self, pgids: &[i32]) -> Result<Vec<bool>> {
        if pgids.is_empty() {
            return Ok(Vec::new());
        }
        let groups: Vec<String> = pgids.iter().map(i32::to_string).collect();
        let script = format!(
            "{LIVE_GROUPS}live; for g in {}; do a $g && echo $g; done; exit 0",
            groups.join(" ")
        );
        let out = self.call(&script, self.timeout).await?;
        let alive: Vec<&str> = out.stdout.split_whitespace().collect();
        Ok(groups.iter().map(|g| alive.contains(&g.as_str())).collect())
    }

    /// Whether `dir` is a directory on the host.
    pub async fn is_dir(&self, dir: &Path) -> Result<bool> {
        let argv = [
            "test".to_string(),
            "-d".to_string(),
            dir.display().to_string(),
        ];
        Ok(self.output(&argv).await?.success())
    }

    /// Creates `file` on the host (private, empty, never through a link),
    /// as [`crate::SpawnSpec::signal_ready`] does here.
    pub async fn create_private_file(&self, file: &Path) -> Result<()> {
        let script = "umask 077; [ ! -L \"$1\" ] && : >> \"$1\"";
        let argv = [
            "sh".to_string(),
            "-c".to_string(),
            script.to_string(),
            "sh".to_string(),
            file.display().to_string(),
        ];
        let out = self.output(&argv).await?;
        if out.success() {
            Ok(())
        } else {
            Err(BackendError::CommandFailed {
                program: "ssh".to_string(),
                argv: vec![
                    self.destination.clone(),
                    format!("create {}", file.display()),
                ],
                status: format!("{:?}", out.code),
                stderr: out.stderr.trim().to_string(),
            })
        }
    }

    /// Runs a POSIX shell script on the host (`sh -c SCRIPT`), with its own
    /// deadline.
    async fn call(&self, script: &str, timeout: Duration) -> Result<Output> {
        let mut inv = self.invocation(&["sh".to_string(), "-c".to_string(), script.to_string()]);
        inv.timeout = timeout;
        inv.output().await
    }
}

/// Shell functions of the scripts run on a host: `live` reads the groups
/// that have a process other than a zombie into `$L` (from /proc: `kill
/// -0` counts a zombie no one has reaped yet), `a G` says whether group G
/// is among them.
const LIVE_GROUPS: &str = "live() { L=' '; for f in /proc/[0-9]*/stat; do { read -r l < \"$f\"; } 2>/dev/null || continue; \
     r=${l##*) }; set -- $r; [ \"$1\" = Z ] || L=\"$L$3 \"; done; }\n\
     a() { case \"$L\" in *\" $1 \"*) return 0;; esac; return 1; }\n";

/// What `ssh` reads as the remote command: each word of `argv` quoted for a
/// POSIX shell, joined by spaces.
pub fn remote_command(argv: &[String]) -> String {
    argv.iter()
        .map(|w| quote_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One word for a POSIX shell: as it is when it holds only characters no
/// shell treats specially, else in single quotes (`'it'\''s'`).
pub fn quote_word(w: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c);
    if !w.is_empty() && w.chars().all(plain) {
        return w.to_string();
    }
    crate::tmux::panes::sh_quote(w)
}

/// Refuses a destination `ssh` would read as something else: empty, an
/// option (a leading `-`), or one with whitespace or control characters.
pub fn check_destination(d: &str) -> Result<()> {
    let refuse = |reason: &str| {
        Err(BackendError::InvalidArgument {
            what: "ssh destination",
            value: d.to_string(),
            reason: reason.to_string(),
        })
    };
    if d.is_empty() {
        return refuse("it is empty");
    }
    if d.starts_with('-') {
        return refuse("it starts with '-' (ssh would read it as an option)");
    }
    if d.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return refuse("it holds whitespace or a control character");
    }
    if d.len() > 1024 {
        return refuse("it is longer than 1024 bytes");
    }
    Ok(())
}

/// Whether `p` can be a path on another machine: absolute, no control
/// characters (it is quoted for that machine's shell, never interpreted).
pub fn check_remote_path(what: &'static str, p: &Path) -> Result<()> {
    let s = p.to_string_lossy();
    let refuse = |reason: &str| {
        Err(BackendError::InvalidArgument {
            what,
            value: s.to_string(),
            reason: reason.to_string(),
        })
    };
    if !p.is_absolute() {
        return refuse("it must be an absolute path");
    }
    if s.chars().any(char::is_control) {
        return refuse("it holds a control character");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_reaches_the_remote_shell_as_one_word() {
        let argv: Vec<String> = ["tmux", "-V", "it's", "a;b", "$(x)", "", "ü ö", "a\nb"]
            .map(String::from)
            .to_vec();
        let cmd = remote_command(&argv);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("for w in {cmd}; do printf '<%s>' \"$w\"; done"))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            "<tmux><-V><it's><a;b><$(x)><><ü ö><a\nb>"
        );
    }

    #[test]
    fn a_destination_ssh_would_read_as_an_option_is_refused() {
        for bad in ["", "-oProxyCommand=touch /tmp/x", "a b", "box\n-v"] {
            assert!(check_destination(bad).is_err(), "{bad:?}");
        }
        for good in ["box", "me@box", "ssh://me@127.0.0.1:2222", "[::1]"] {
            assert!(check_destination(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn the_ssh_call_is_batch_mode_with_a_deadline_and_the_destination_after_dashdash() {
        let h = SshHost::new("box", "me@box")
            .unwrap()
            .control_dir("/tmp/s")
            .timeout(Duration::from_secs(3));
        let inv = h.invocation(&["tmux".into(), "-V".into()]);
        assert_eq!(inv.program, "ssh");
        assert_eq!(inv.timeout, Duration::from_secs(3));
        let a = inv.args.join(" ");
        assert!(a.contains("-o BatchMode=yes"), "{a}");
        assert!(a.contains("-o ConnectTimeout=3"), "{a}");
        assert!(
            a.contains("-o ControlMaster=auto -o ControlPath=/tmp/s/%C"),
            "{a}"
        );
        assert!(a.ends_with("-T -- me@box tmux -V"), "{a}");
        assert!(!a.contains(" -F "), "the user's own ssh configuration: {a}");
    }

    #[test]
    fn a_socket_directory_too_long_for_a_socket_means_one_connection_a_call() {
        let long = format!("/tmp/{}", "d".repeat(80));
        let h = SshHost::new("box", "box").unwrap().control_dir(long);
        assert!(!h.shares_connection());
        let a = h.invocation(&["true".into()]).args.join(" ");
        assert!(
            a.contains("ControlPath=none") && !a.contains("ControlMaster"),
            "{a}"
        );
    }
}
