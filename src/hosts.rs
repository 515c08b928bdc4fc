//! The other machines of a team (DESIGN §13): a spec's `[[host]]`
//! ([`HostSpec`], checked with the rest of the spec by `config`), the
//! team's record of them (`<state>/hosts.json`, [`record`], [`recorded`]),
//! and the ssh handle of one ([`ssh_of`]). Below the session, which opens
//! a backend over them, and the operations (`ops::hosts` checks a host,
//! `ops::ring` rings a teammate there).

use crate::atomic_file;
use crate::names;
use crate::paths::Root;
use serde::Deserialize;
use std::path::PathBuf;
use swarm_backends::host::SshHost;

/// `[[host]]`: another machine, reached with the user's own `ssh`, that
/// sees this state root at `root` (DESIGN §13).
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    pub name: String,
    /// Any destination `ssh` takes.
    pub ssh: String,
    /// Where this state root is mounted on that host.
    pub root: PathBuf,
    /// Its swarm binary (`None`: `swarm` on its PATH).
    #[serde(default)]
    pub swarm: Option<String>,
    /// Seconds one call to it may take, connecting included (default 10).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Seconds it may not answer before its teammates' tasks go back on
    /// the board (default 300; its teammates are not dead meanwhile).
    #[serde(default)]
    pub unreachable_grace: Option<u64>,
    /// Seconds between the own looks of a teammate runtime there at its
    /// inbox and the task list (default 1): senders here ring it over ssh,
    /// and this bounds the wait of a write nobody rings (a ring lost to a
    /// partition, a write made on that machine).
    #[serde(default)]
    pub poll: Option<f64>,
}

/// How often a runtime on another machine looks, unless its `[[host]]`
/// says (`poll`).
pub const HOST_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a host may not answer before its teammates' tasks go back on
/// the board, unless its `[[host]]` says (`unreachable_grace`).
pub const UNREACHABLE_GRACE: std::time::Duration = std::time::Duration::from_secs(300);

impl HostSpec {
    /// Its swarm binary.
    pub fn swarm(&self) -> &str {
        self.swarm.as_deref().unwrap_or("swarm")
    }

    /// How long it may not answer before its teammates' tasks go back.
    pub fn unreachable_grace(&self) -> std::time::Duration {
        self.unreachable_grace
            .map_or(UNREACHABLE_GRACE, std::time::Duration::from_secs)
    }

    /// How often a teammate runtime there looks without being rung.
    pub fn poll_every(&self) -> std::time::Duration {
        self.poll.map_or(HOST_POLL, |s| {
            std::time::Duration::from_secs_f64(s.clamp(0.1, 300.0))
        })
    }

    /// How long one call to it may take.
    pub fn timeout(&self) -> std::time::Duration {
        self.timeout
            .map_or(swarm_backends::host::DEFAULT_TIMEOUT, |s| {
                std::time::Duration::from_secs_f64(s.clamp(0.1, 300.0))
            })
    }

    pub(crate) fn problems(&self, at: &str) -> Vec<String> {
        let mut out = Vec::new();
        if let Err(e) = names::validate_member(&self.name) {
            out.push(format!("{at}: {e}"));
        } else if self.name == swarm_backends::host::LOCAL {
            out.push(format!(
                "{at}: \"local\" is this machine and needs no [[host]]; pick another name"
            ));
        }
        if let Err(e) = swarm_backends::host::check_destination(&self.ssh) {
            out.push(format!("{at}: ssh: {e}"));
        }
        if let Err(e) = swarm_backends::host::check_remote_path("root", &self.root) {
            out.push(format!("{at}: {e}"));
        }
        if let Some(t) = self.timeout
            && !(t > 0.0 && t <= 300.0)
        {
            out.push(format!(
                "{at}: timeout {t} is out of range (seconds, above 0 and at most 300)"
            ));
        }
        if let Some(p) = self.poll
            && !(0.1..=300.0).contains(&p)
        {
            out.push(format!(
                "{at}: poll {p} is out of range (seconds, at least 0.1 and at most 300)"
            ));
        }
        if let Some(b) = &self.swarm
            && (b.is_empty() || b.chars().any(char::is_control))
        {
            out.push(format!(
                "{at}: swarm must name a program (a path or a name on its PATH)"
            ));
        }
        out
    }
}

/// Records the spec's `[[host]]`s as the team's (`<state>/hosts.json`),
/// so that `swarm spawn --host` and `swarm doctor --host` know them without
/// the spec; a spec without any removes the record.
pub fn record(root: &Root, team: &str, hosts: &[HostSpec]) -> anyhow::Result<()> {
    let path = root.hosts_record(team)?;
    if hosts.is_empty() {
        atomic_file::remove_if_there(&path)
            .map_err(|e| anyhow::anyhow!("removing {}: {e}", path.display()))?;
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        atomic_file::ensure_dir(dir)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    }
    let bytes = serde_json::to_vec_pretty(hosts)?;
    atomic_file::write_atomic(&path, &bytes)
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))
}

/// The team's recorded hosts (none when it has no record).
pub fn recorded(root: &Root, team: &str) -> anyhow::Result<Vec<HostSpec>> {
    let path = root.hosts_record(team)?;
    match atomic_file::read_optional(&path)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?
    {
        None => Ok(Vec::new()),
        Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            anyhow::anyhow!(
                "{} is not a list of hosts ({e}); `swarm up SPEC` writes it again",
                path.display()
            )
        }),
    }
}

/// The ssh handle of `host`: its destination, the shared connection's
/// socket under the state root (`<root>/swarm/.ssh`, 0700), its deadline.
pub fn ssh_of(root: &Root, host: &HostSpec) -> anyhow::Result<SshHost> {
    let dir = root.dir().join("swarm").join(".ssh");
    atomic_file::ensure_dir(&dir)
        .map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    Ok(SshHost::new(&host.name, &host.ssh)?
        .control_dir(dir)
        .timeout(host.timeout()))
}
