//! Another machine of a spec (`[[host]]`, DESIGN §13), checked the way a
//! teammate there would need it: reached with the user's `ssh` (batch mode,
//! one shared connection, a deadline on every call), tmux new enough, the
//! same swarm version as this one, and this state root seen there at the
//! host's `root`. `swarm doctor --host NAME` prints the result, each failed
//! check with its fix.

use crate::atomic_file;
use crate::hosts::{HostSpec, recorded, ssh_of};
use crate::paths::Root;
use std::path::PathBuf;
use std::time::Instant;
use swarm_backends::command::Output;
use swarm_backends::host::SshHost;
use swarm_backends::{BackendError, tmux};

/// Whether `swarm spawn --host NAME` may start a teammate of `team` there:
/// `local` (this machine) or one of the team's recorded hosts; an unknown
/// one is refused with the team's hosts.
pub fn check_spawn_host(root: &Root, team: &str, name: &str) -> anyhow::Result<()> {
    if name == swarm_backends::host::LOCAL {
        return Ok(());
    }
    let hosts = recorded(root, team)?;
    if hosts.iter().any(|h| h.name == name) {
        return Ok(());
    }
    let mut names = vec![swarm_backends::host::LOCAL.to_string()];
    names.extend(hosts.into_iter().map(|h| h.name));
    anyhow::bail!(
        "no host {name:?} in team {team:?} (hosts: {}); a team's hosts are its spec's [[host]]s, \
         recorded by `swarm up SPEC`",
        names.join(", ")
    )
}

/// Names `spec` (a pane opened here for this machine) for `host`: every
/// path under this state root under the host's `root`, this swarm
/// (`exe`) as the host's, `PATH` the host's swarm's directory and the
/// usual system directories, `SWARM_WAKE=ring` with `SWARM_HOST` and
/// `SWARM_POLL_MS` (no doorbell rung here reaches a runtime there: it is
/// rung through its host, `ops::ring`, and looks itself every `poll`). A
/// working directory outside the root is the host's root (it may not exist
/// there).
pub fn for_host(
    spec: &mut swarm_backends::SpawnSpec,
    local_root: &std::path::Path,
    host: &HostSpec,
    exe: &str,
) {
    let here = local_root.display().to_string();
    let there = host.root.display().to_string();
    let name = |s: &str| -> String {
        if s == exe {
            return host.swarm().to_string();
        }
        match s.strip_prefix(&here) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("{there}{rest}"),
            _ => s.to_string(),
        }
    };
    let path = |p: &std::path::Path| PathBuf::from(name(&p.display().to_string()));
    spec.program = name(&spec.program);
    spec.args = spec.args.iter().map(|a| name(a)).collect();
    let swarm_dir = std::path::Path::new(host.swarm())
        .parent()
        .filter(|d| d.is_absolute())
        .map(|d| format!("{}:", d.display()))
        .unwrap_or_default();
    for (k, v) in &mut spec.env {
        *v = if k == "PATH" {
            format!("{swarm_dir}/usr/local/bin:/usr/bin:/bin")
        } else {
            name(v)
        };
    }
    use crate::teammate::wake::{HOST_VAR, POLL_VAR, WAKE_VAR};
    spec.env
        .retain(|(k, _)| ![WAKE_VAR, HOST_VAR, POLL_VAR].contains(&k.as_str()));
    spec.env.extend([
        (WAKE_VAR.to_string(), "ring".to_string()),
        (HOST_VAR.to_string(), host.name.clone()),
        (
            POLL_VAR.to_string(),
            host.poll_every().as_millis().to_string(),
        ),
    ]);
    let cwd = path(&spec.cwd);
    spec.cwd = if cwd.starts_with(&host.root) {
        cwd
    } else {
        host.root.clone()
    };
    spec.ready_file = spec.ready_file.as_deref().map(path);
    spec.output = spec.output.as_deref().map(path);
    spec.pid_file = spec.pid_file.as_deref().map(path);
}

/// One check of a host.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HostCheck {
    /// `ssh`, `tmux`, `swarm`, `root` or `wake`.
    pub check: &'static str,
    pub ok: bool,
    /// What was found (a version, a time, an error).
    pub detail: String,
    /// What to do about a failed check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl HostCheck {
    fn ok(check: &'static str, detail: impl Into<String>) -> HostCheck {
        HostCheck {
            check,
            ok: true,
            detail: detail.into(),
            fix: None,
        }
    }

    fn failed(check: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> HostCheck {
        HostCheck {
            check,
            ok: false,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

/// Every check of `host`, in order; after a failed `ssh` the others are
/// not tried (each would fail the same way, a deadline each).
pub fn check(root: &Root, host: &HostSpec) -> anyhow::Result<Vec<HostCheck>> {
    let ssh = ssh_of(root, host)?;
    let mut out = Vec::new();
    let began = Instant::now();
    let reached = ssh.output_blocking(&["true".to_string()]);
    out.push(match reached {
        Ok(o) if o.success() => HostCheck::ok(
            "ssh",
            format!(
                "{} answered in {} ms{}",
                host.ssh,
                began.elapsed().as_millis(),
                if ssh.shares_connection() {
                    " (one shared connection)"
                } else {
                    " (no shared connection: the state root's path is too long for its socket)"
                }
            ),
        ),
        Ok(o) => {
            let why = last_line(&o);
            let refused = [
                "Permission denied",
                "verification failed",
                "password",
                "passphrase",
            ];
            let fix = if refused.iter().any(|r| why.contains(r)) {
                format!(
                    "make `ssh {} true` work without a prompt (a key in ssh-agent or \
                     ~/.ssh/config, the host's key in known_hosts; swarm runs ssh in batch mode)",
                    host.ssh
                )
            } else {
                reach_fix(host)
            };
            HostCheck::failed("ssh", format!("`ssh {}` failed: {why}", host.ssh), fix)
        }
        Err(e) => HostCheck::failed("ssh", unreachable(&e), reach_fix(host)),
    });
    if !out[0].ok {
        ssh.close();
        return Ok(out);
    }
    out.push(check_tmux(&ssh, host));
    out.push(check_swarm(&ssh, host));
    out.push(check_root(root, &ssh, host));
    if out.iter().all(|c| c.ok) {
        // Its swarm runs and sees this root: can it be rung there?
        out.push(check_wake(&ssh, host));
    }
    ssh.close();
    Ok(out)
}

fn check_tmux(ssh: &SshHost, host: &HostSpec) -> HostCheck {
    let needed = format!(
        "{}.{}",
        tmux::commands::MIN_VERSION.0,
        tmux::commands::MIN_VERSION.1
    );
    let fix = format!("install tmux {needed} or newer on {}", host.name);
    match ssh.output_blocking(&["tmux".to_string(), "-V".to_string()]) {
        Ok(o) if o.success() => {
            let v = o.stdout.trim().to_string();
            match tmux::commands::parse_version(&v) {
                Ok(found) if found >= tmux::commands::MIN_VERSION => HostCheck::ok("tmux", v),
                Ok(_) => HostCheck::failed("tmux", format!("{v} is too old"), fix),
                Err(_) => HostCheck::failed("tmux", format!("unreadable version {v:?}"), fix),
            }
        }
        Ok(o) => HostCheck::failed("tmux", format!("`tmux -V` failed: {}", last_line(&o)), fix),
        Err(e) => HostCheck::failed("tmux", unreachable(&e), fix),
    }
}

fn check_swarm(ssh: &SshHost, host: &HostSpec) -> HostCheck {
    let mine = env!("CARGO_PKG_VERSION");
    let fix = format!(
        "install swarm {mine} on {} (or set swarm = \"/path/to/swarm\" in its [[host]])",
        host.name
    );
    match ssh.output_blocking(&[host.swarm().to_string(), "--version".to_string()]) {
        Ok(o) if o.success() => {
            let v = o.stdout.split_whitespace().last().unwrap_or_default();
            if v == mine {
                HostCheck::ok("swarm", format!("{} {v}", host.swarm()))
            } else {
                HostCheck::failed(
                    "swarm",
                    format!("{} is version {v:?}, this one is {mine}", host.swarm()),
                    fix,
                )
            }
        }
        Ok(o) => HostCheck::failed(
            "swarm",
            format!("`{} --version` failed: {}", host.swarm(), last_line(&o)),
            fix,
        ),
        Err(e) => HostCheck::failed("swarm", unreachable(&e), fix),
    }
}

/// A fresh random word written under this root, read back through the
/// host's `root`: the same bytes there means the same files.
fn check_root(root: &Root, ssh: &SshHost, host: &HostSpec) -> HostCheck {
    let fix = format!(
        "mount this state root ({}) on {} (NFS or another shared filesystem) and set \
         root = \"<where it is mounted there>\" in its [[host]]",
        root.dir().display(),
        host.name
    );
    let rel = PathBuf::from("swarm")
        .join(".hosts")
        .join(format!("{}.probe", host.name));
    let here = root.dir().join(&rel);
    let word = uuid::Uuid::new_v4().to_string();
    let written = here
        .parent()
        .map_or(Ok(()), atomic_file::ensure_dir)
        .and_then(|()| atomic_file::write_atomic(&here, word.as_bytes()));
    if let Err(e) = written {
        return HostCheck::failed(
            "root",
            format!("cannot write the probe {}: {e}", here.display()),
            "make the state root writable here",
        );
    }
    let there = host.root.join(&rel);
    let read = ssh.output_blocking(&["cat".to_string(), there.display().to_string()]);
    let _ = atomic_file::remove_if_there(&here);
    match read {
        Ok(o) if o.success() && o.stdout == word => HostCheck::ok(
            "root",
            format!("{} there is this state root", host.root.display()),
        ),
        Ok(o) if o.success() => HostCheck::failed(
            "root",
            format!(
                "{} there holds other files than this state root",
                host.root.display()
            ),
            fix,
        ),
        Ok(o) => HostCheck::failed(
            "root",
            format!(
                "this state root is not seen at {} there: {}",
                host.root.display(),
                last_line(&o)
            ),
            fix,
        ),
        Err(e) => HostCheck::failed("root", unreachable(&e), fix),
    }
}

/// The wake-up path there: a doorbell (a FIFO of that kernel) made under
/// the host's root and rung by `swarm ring --probe` over ssh, the way a
/// send here rings a teammate there (`ops::ring`); and the bound of a
/// runtime's own looks there, for what no one rings.
fn check_wake(ssh: &SshHost, host: &HostSpec) -> HostCheck {
    let began = Instant::now();
    let probe = ssh.output_blocking(&[
        host.swarm().to_string(),
        "--home".to_string(),
        host.root.display().to_string(),
        "ring".to_string(),
        "--probe".to_string(),
    ]);
    let every = host.poll_every().as_secs_f64();
    match probe {
        Ok(o) if o.success() => HostCheck::ok(
            "wake",
            format!(
                "a doorbell there was rung over ssh in {} ms; its runtimes also look every {every} s \
                 (poll) for what no one rings",
                began.elapsed().as_millis()
            ),
        ),
        Ok(o) => HostCheck::failed(
            "wake",
            format!(
                "no doorbell can be rung there ({}); its runtimes would only look every {every} s",
                last_line(&o)
            ),
            format!(
                "let {} make FIFOs under {} (a filesystem that allows mkfifo), or lower its poll",
                host.name,
                host.root.display()
            ),
        ),
        Err(e) => HostCheck::failed("wake", unreachable(&e), reach_fix(host)),
    }
}

fn reach_fix(host: &HostSpec) -> String {
    format!(
        "check that {} is up and reachable (`ssh {} true`), or raise its timeout \
         (seconds, in its [[host]])",
        host.name, host.ssh
    )
}

/// The last line a failed remote call printed on stderr (ssh's own error
/// when it could not connect), or its exit status.
pub(super) fn last_line(o: &Output) -> String {
    o.stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map_or_else(
            || match o.code {
                Some(c) => format!("exit code {c}"),
                None => "killed by a signal".to_string(),
            },
            str::to_string,
        )
}

/// A call that never finished (stopped at its deadline), or never started.
pub(super) fn unreachable(e: &BackendError) -> String {
    match e {
        BackendError::Timeout { after, .. } => format!(
            "no answer within {:.1} s (the call was stopped)",
            after.as_secs_f64()
        ),
        other => other.to_string(),
    }
}
