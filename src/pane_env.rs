//! The environment of every process swarm starts in a pane, built in one
//! place (DESIGN §6): a teammate's pane and the agents its runtime starts
//! ([`member`]), and the lead's own pane ([`lead`]).
//!
//! Exactly: the `SWARM_*` identity, `PATH` with swarm's own directory
//! first, the few variables of the caller's environment a terminal program
//! needs ([`INHERITED`]), and what the spec names for the member
//! (`swarmEnv`). Nothing else of the caller's environment leaks in.

use crate::team::{Member, SwarmField, Team};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;

/// The variables of the caller's environment a pane inherits.
pub const INHERITED: [&str; 6] = ["PATH", "HOME", "USER", "SHELL", "TERM", "LANG"];

/// What the lead's pane also keeps: its log filter and colour choice.
const LEAD_EXTRA: [&str; 2] = ["SWARM_LOG", "NO_COLOR"];

/// `PATH` with the directory of the running `swarm` first, each directory
/// once (the first time it appears).
pub fn path_with_swarm() -> Result<String> {
    let exe = std::env::current_exe().context("finding the swarm executable")?;
    let mut dirs: Vec<PathBuf> = exe
        .parent()
        .map(|d| vec![d.to_path_buf()])
        .unwrap_or_default();
    if let Some(p) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&p) {
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    }
    let joined = std::env::join_paths(dirs).context("building PATH for a pane")?;
    Ok(joined.to_string_lossy().into_owned())
}

/// The inherited variables and the team's identity, shared by every pane.
fn base(team: &Team) -> Result<Vec<(String, String)>> {
    let mut env: Vec<(String, String)> = Vec::new();
    for k in INHERITED {
        let v = match k {
            "PATH" => Some(path_with_swarm()?),
            "TERM" => Some(std::env::var(k).unwrap_or_else(|_| "xterm-256color".into())),
            _ => std::env::var(k).ok(),
        };
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            env.push((k.to_string(), v));
        }
    }
    env.push((
        "SWARM_HOME".into(),
        team.root.dir().to_string_lossy().into_owned(),
    ));
    env.push(("SWARM_TEAM".into(), team.name.clone()));
    Ok(env)
}

/// The lead's pane: the base and the lead's log settings.
pub fn lead(team: &Team) -> Result<Vec<(String, String)>> {
    let mut env = base(team)?;
    for k in LEAD_EXTRA {
        if let Ok(v) = std::env::var(k) {
            env.push((k.to_string(), v));
        }
    }
    Ok(env)
}

/// `member`'s pane, and every agent process its runtime starts: the base,
/// its identity, the team's scratchpad (created here), and its `swarmEnv`
/// (which wins over the rest). A `swarmEnv` that is not an object of
/// strings is an error naming the member and the key, never skipped.
pub fn member(team: &Team, member: &Member) -> Result<Vec<(String, String)>> {
    let mut env = base(team)?;
    let agent_id = if member.agent_id.is_empty() {
        format!("{}@{}", member.name, team.name)
    } else {
        member.agent_id.clone()
    };
    env.push(("SWARM_AGENT_NAME".into(), member.name.clone()));
    env.push(("SWARM_AGENT_ID".into(), agent_id));
    env.push((
        "SWARM_AGENT_COLOR".into(),
        member.color.clone().unwrap_or_default(),
    ));
    let scratch = team.root.scratchpad(&team.name)?;
    crate::atomic_file::ensure_dir(&scratch)
        .with_context(|| format!("creating {}", scratch.display()))?;
    env.push((
        "SWARM_SCRATCHPAD".into(),
        scratch.to_string_lossy().into_owned(),
    ));
    for (k, v) in swarm_env(member)? {
        env.retain(|(key, _)| *key != k);
        env.push((k, v));
    }
    Ok(env)
}

/// The member's `swarmEnv`, checked: an object of strings with valid names.
pub fn swarm_env(member: &Member) -> Result<Vec<(String, String)>> {
    let Some(v) = member.swarm_field(SwarmField::Env) else {
        return Ok(Vec::new());
    };
    if v.is_null() {
        return Ok(Vec::new());
    }
    let Some(obj) = v.as_object() else {
        bail!("{}'s swarmEnv is not an object: {v}", member.name);
    };
    let mut out = Vec::with_capacity(obj.len());
    for (k, v) in obj {
        let Some(s) = v.as_str() else {
            bail!("{}'s swarmEnv.{k} is not a string: {v}", member.name);
        };
        if k.is_empty() || k.contains('=') || k.contains('\0') || s.contains('\0') {
            bail!(
                "{}'s swarmEnv has an invalid variable {:?}",
                member.name,
                crate::text::escape_line(k)
            );
        }
        out.push((k.clone(), s.to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn team() -> (tempfile::TempDir, Team) {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::paths::Root::new(dir.path().join("root"));
        (dir, Team::new(&root, "t"))
    }

    #[test]
    fn a_members_environment_is_exactly_its_identity_and_the_inherited_few() {
        let (_d, team) = team();
        let m = Member::teammate("t", "alice", "blue", "/");
        let env = member(&team, &m).unwrap();
        let get = |k: &str| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        assert_eq!(get("SWARM_AGENT_ID").as_deref(), Some("alice@t"));
        assert_eq!(get("SWARM_AGENT_NAME").as_deref(), Some("alice"));
        assert_eq!(get("SWARM_TEAM").as_deref(), Some("t"));
        assert!(get("SWARM_SCRATCHPAD").is_some_and(|p| std::path::Path::new(&p).is_dir()));
        let exe_dir = std::env::current_exe()
            .unwrap()
            .parent()
            .unwrap()
            .to_path_buf();
        let path = get("PATH").unwrap();
        let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
        assert_eq!(dirs[0], exe_dir, "swarm's directory first");
        let mut uniq = dirs.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), dirs.len(), "each directory once: {path}");
        let allowed: Vec<&str> = INHERITED
            .iter()
            .copied()
            .chain([
                "SWARM_HOME",
                "SWARM_TEAM",
                "SWARM_AGENT_NAME",
                "SWARM_AGENT_ID",
                "SWARM_AGENT_COLOR",
                "SWARM_SCRATCHPAD",
            ])
            .collect();
        for (k, _) in &env {
            assert!(allowed.contains(&k.as_str()), "{k} leaked in");
        }
    }

    #[test]
    fn swarm_env_wins_and_bad_values_are_errors_not_skipped() {
        let (_d, team) = team();
        let mut m = Member::teammate("t", "alice", "blue", "/");
        m.set_swarm_field(SwarmField::Env, json!({"TERM": "dumb", "EXTRA": "1"}));
        let env = member(&team, &m).unwrap();
        assert_eq!(env.iter().filter(|(k, _)| k == "TERM").count(), 1);
        assert!(env.contains(&("TERM".into(), "dumb".into())));
        assert!(env.contains(&("EXTRA".into(), "1".into())));
        m.set_swarm_field(SwarmField::Env, json!({"N": 3}));
        let err = member(&team, &m).unwrap_err().to_string();
        assert!(err.contains("swarmEnv.N is not a string"), "{err}");
        m.set_swarm_field(SwarmField::Env, json!(["x"]));
        assert!(member(&team, &m).is_err());
        m.set_swarm_field(SwarmField::Env, json!({"A=B": "x"}));
        assert!(member(&team, &m).is_err());
    }
}
