//! `swarm status`: the roster, unread counts and task counts of a team.

use super::{Context, Exit, print_json};
use crate::cli::StatusArgs;
use crate::dropped::ignore;
use crate::tasks::Status;
use crate::team::RosterError;
use crate::team::status::{
    Attention, ByOwner, Facts, MemberStatus, PaneSeen, Progress, recorded_exit,
};
use crate::text::escape_line;
use anyhow::Result;
use serde_json::json;
use swarm_backends::PaneStatus;

/// Each member's status by the one rule ([`MemberStatus::of`]), the lead
/// (`None`) excepted. Its pane is looked up when the team's backend can be
/// reached from here; otherwise the roster's record decides.
fn member_statuses(
    ctx: &Context,
    team: &crate::team::Team,
    members: &[crate::team::Member],
    tasks: &[crate::tasks::Task],
) -> Vec<Option<MemberStatus>> {
    // A backend that cannot be reached from here leaves the roster's
    // record to decide.
    let opened =
        crate::session::Session::open(&crate::session::Location::of(&ctx.root, &team.name));
    let panes: Vec<PaneSeen> = ignore(opened, "opening the team's backend")
        .filter(|o| o.caps().panes_outlive_lead)
        .and_then(|opened| {
            let rt = ignore(crate::session::runtime(), "starting a runtime")?;
            let got = ignore(
                rt.block_on(crate::ops::depart::pane_statuses(&opened, members)),
                "looking up the members' panes",
            )?;
            Some(
                got.into_iter()
                    .map(|p| match p {
                        PaneStatus::Running { .. } => PaneSeen::Running,
                        PaneStatus::Exited { code } => PaneSeen::Dead(code),
                        PaneStatus::Gone | PaneStatus::Foreign => PaneSeen::Dead(None),
                    })
                    .collect(),
            )
        })
        .unwrap_or_else(|| {
            // In-process panes live inside the lead: with no lead
            // running, none of them can be alive.
            let lead_gone = ignore(
                crate::team::locks::lead_pid_alive(team),
                "reading the lead's pid",
            )
            .flatten()
            .is_none();
            members
                .iter()
                .map(|m| {
                    if lead_gone && m.backend_kind() == Some(swarm_backends::BackendKind::InProcess)
                    {
                        PaneSeen::Dead(None)
                    } else {
                        PaneSeen::Unknown
                    }
                })
                .collect()
        });
    let waiting = crate::ops::depart::waiting_for_approval(team).unwrap_or_else(|e| {
        let e = format!("{e:#}");
        let e = escape_line(&e);
        eprintln!("swarm: warning: cannot tell who waits for approval ({e}); not shown");
        Vec::new()
    });
    members
        .iter()
        .zip(panes)
        .map(|(m, pane)| {
            if m.is_lead() {
                return None;
            }
            // A member with no pane yet is being spawned: not dead.
            let pane = if m.tmux_pane_id.is_empty() && pane == PaneSeen::Dead(None) {
                PaneSeen::Unknown
            } else {
                pane
            };
            Some(MemberStatus::of(&Facts {
                recorded_exit: recorded_exit(m),
                pane,
                active: m.is_active == Some(true),
                has_task: tasks
                    .iter()
                    .any(|t| t.owner.as_deref() == Some(&m.name) && t.status == Status::InProgress),
                waiting: waiting.contains(&m.name),
                stopping: None,
            }))
        })
        .collect()
}

/// What needs the user and how the task in progress goes, per member, by
/// the rules the TeamsDialog uses ([`Attention::of`], [`Progress::of`]).
fn member_extras(
    team: &crate::team::Team,
    members: &[crate::team::Member],
    statuses: &[Option<MemberStatus>],
    tasks: &[crate::tasks::Task],
) -> Vec<(Option<Attention>, Option<Progress>)> {
    let board = ByOwner::of(tasks);
    members
        .iter()
        .zip(statuses)
        .map(|(m, status)| match status {
            Some(s) => (
                Attention::of(s, &m.name, &board),
                Progress::of(team, &m.name, &board),
            ),
            None => (None, None),
        })
        .collect()
}

/// The ATTENTION and PROGRESS cells: `! task #3 failed`, `12s › compiling`.
fn extras_cells((attention, progress): &(Option<Attention>, Option<Progress>)) -> [String; 2] {
    let attention = attention.as_ref().map_or_else(
        || "-".to_owned(),
        |a| format!("! {}", escape_line(&a.label())),
    );
    let progress = progress.as_ref().map_or_else(
        || "-".to_owned(),
        |p| {
            let elapsed = p.elapsed.map(crate::tui::state::age).unwrap_or_default();
            match &p.last_line {
                Some(l) => format!("{elapsed} › {}", escape_line(l)),
                None => elapsed,
            }
        },
    );
    [attention, progress]
}

/// The lead's liveness and where the team's panes live, for the header.
struct Where {
    lead_pid: Option<u32>,
    record: crate::session::SessionRecord,
}

impl Where {
    fn of(ctx: &Context, team: &crate::team::Team) -> Where {
        Where {
            // A lead file that does not read: shown as no lead.
            lead_pid: ignore(
                crate::team::locks::lead_pid_alive(team),
                "reading the lead's pid",
            )
            .flatten(),
            record: crate::session::SessionRecord::load(&ctx.root, &team.name).unwrap_or_else(
                |e| {
                    let e = format!("{e:#}");
                    let e = escape_line(&e);
                    eprintln!("swarm: warning: {e}; the team's backend and tmux server not shown");
                    Default::default()
                },
            ),
        }
    }

    /// "lead: running (pid 12) · tmux session swarm-t on /tmp/sock", or
    /// how to take the team back.
    fn line(&self, team: &str) -> String {
        let lead = match self.lead_pid {
            Some(0) => "lead: running".to_string(),
            Some(pid) => format!("lead: running (pid {pid})"),
            None => format!("lead: not running (`swarm up --team {team}` takes the team back)"),
        };
        let mut parts = vec![lead];
        if let Some(b) = self.record.backend {
            parts.push(format!("backend {}", b.as_str()));
        }
        if let Some(s) = &self.record.session {
            parts.push(format!("tmux session {s}"));
        }
        if let Some(sock) = &self.record.tmux_socket {
            parts.push(format!("socket {}", sock.display()));
        }
        parts.join(" · ")
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "lead": {"alive": self.lead_pid.is_some(), "pid": self.lead_pid.filter(|p| *p != 0)},
            "backend": self.record.backend.map(|b| b.as_str()),
            "tmuxSession": self.record.session, "tmuxSocket": self.record.tmux_socket,
        })
    }
}

/// The member table: a header row and one row per member, each cell
/// already escaped; columns are as wide as their widest cell. A new column
/// is one more header and one more cell in [`member_row`].
const HEADER: [&str; 9] = [
    "MEMBER",
    "COLOR",
    "STATUS",
    "PANE",
    "BACKEND",
    "UNREAD",
    "WORKTREE",
    "ATTENTION",
    "PROGRESS",
];

/// The columns aligned to the right (numbers).
const NUMERIC: [&str; 1] = ["UNREAD"];

fn member_row(
    m: &crate::team::Member,
    status: Option<&MemberStatus>,
    unread: usize,
    extras: &(Option<Attention>, Option<Progress>),
) -> Vec<String> {
    let [attention, progress] = extras_cells(extras);
    let or_dash =
        |v: Option<&str>| escape_line(v.filter(|s| !s.is_empty()).unwrap_or("-")).into_owned();
    vec![
        escape_line(&m.name).into_owned(),
        or_dash(m.color.as_deref()),
        status.map(|s| s.label()).unwrap_or_else(|| "-".to_string()),
        or_dash(Some(m.tmux_pane_id.as_str())),
        or_dash(m.backend_type.as_deref()),
        unread.to_string(),
        escape_line(&crate::worktree::member_line(m).unwrap_or_else(|| "-".into())).into_owned(),
        attention,
        progress,
    ]
}

/// Lines of a table, left-aligned but for the [`NUMERIC`] columns.
fn table(header: &[&str], rows: &[Vec<String>]) -> Vec<String> {
    let head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let all: Vec<&Vec<String>> = std::iter::once(&head).chain(rows).collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| all.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    all.iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(i, c)| {
                    if NUMERIC.contains(&header[i]) {
                        format!("{c:>w$}", w = widths[i])
                    } else {
                        format!("{c:<w$}", w = widths[i])
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        })
        .collect()
}

/// Each member's unread count, warning of an inbox that was corrupt (and
/// set aside).
fn unread_counts(team: &crate::team::Team, members: &[crate::team::Member]) -> Result<Vec<usize>> {
    let mailbox = team.mailbox();
    let mut counts = Vec::new();
    for m in members {
        let read = mailbox.read(&m.name)?;
        if let Some(q) = &read.quarantined {
            eprintln!(
                "swarm: warning: inbox of {} was corrupt; copied to {}",
                escape_line(&m.name),
                q.display()
            );
        }
        counts.push(read.entries.iter().filter(|e| e.is_unread()).count());
    }
    Ok(counts)
}

/// One member as `swarm status --json` shows it.
fn member_json(
    m: &crate::team::Member,
    status: Option<&MemberStatus>,
    unread: usize,
    (attention, progress): &(Option<Attention>, Option<Progress>),
) -> serde_json::Value {
    json!({
        "name": m.name, "agentId": m.agent_id, "color": m.color,
        "paneId": m.tmux_pane_id, "backendType": m.backend_type,
        "isActive": m.is_active, "mode": m.mode, "model": m.model, "unread": unread,
        "status": status.map(|s| s.label()),
        "alive": status.map(|s| s.is_alive()),
        "attention": attention.as_ref().map(Attention::label),
        "progress": progress.as_ref().map(|p| json!({
            "elapsedSecs": p.elapsed.map(|e| e.as_secs()),
            "lastLine": p.last_line,
        })),
        "worktree": crate::worktree::member_json(m),
    })
}

pub fn run(ctx: &Context, args: StatusArgs) -> Result<Exit> {
    let team = ctx.team()?;
    let (roster, repaired) = match team.roster().load() {
        Ok(r) => r,
        Err(e @ RosterError::NotFound { .. }) => return Ok(Exit::No(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    if let Some(r) = repaired {
        eprintln!(
            "swarm: warning: config.json of team {} was unreadable; copied to {} and rebuilt with {} member(s)",
            escape_line(&team.name),
            r.quarantined.display(),
            r.rebuilt_members
        );
    }
    let members: Vec<_> = roster
        .members
        .iter()
        .zip(unread_counts(&team, &roster.members)?)
        .collect();
    // Never freed: the command ends after printing, and freeing 10,000
    // tasks one by one would be a tenth of its time.
    let list = std::mem::ManuallyDrop::new(team.tasks().list()?);
    let statuses = member_statuses(ctx, &team, &roster.members, &list.tasks);
    let extras = member_extras(&team, &roster.members, &statuses, &list.tasks);
    let place = Where::of(ctx, &team);
    for q in &list.quarantined {
        eprintln!(
            "swarm: warning: a corrupt task file was copied to {}",
            q.display()
        );
    }
    let count = |s: Status| list.tasks.iter().filter(|t| t.status == s).count();
    let (pending, in_progress, completed) = (
        count(Status::Pending),
        count(Status::InProgress),
        count(Status::Completed),
    );

    if args.json {
        let ms: Vec<_> = members
            .iter()
            .zip(&statuses)
            .zip(&extras)
            .map(|(((m, unread), status), extra)| member_json(m, status.as_ref(), *unread, extra))
            .collect();
        let mut out = json!({
            "team": roster.name, "root": ctx.root.dir(), "members": ms,
            "tasks": {"pending": pending, "in_progress": in_progress, "completed": completed,
                      "total": list.tasks.len()},
        });
        if let (Some(o), serde_json::Value::Object(w)) = (out.as_object_mut(), place.json()) {
            o.extend(w);
        }
        print_json(&out);
        return Ok(Exit::Ok);
    }
    // Everything below comes from files anyone may have written.
    println!(
        "team {} ({})",
        escape_line(&roster.name),
        escape_line(&ctx.root.dir().display().to_string())
    );
    println!("{}", escape_line(&place.line(&roster.name)));
    let rows: Vec<Vec<String>> = members
        .iter()
        .zip(&statuses)
        .zip(&extras)
        .map(|(((m, unread), status), extra)| member_row(m, status.as_ref(), *unread, extra))
        .collect();
    for line in table(&HEADER, &rows) {
        println!("{line}");
    }
    println!(
        "tasks: {completed}/{} completed · {in_progress} in progress · {pending} pending",
        list.tasks.len()
    );
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::table;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell() {
        let rows = vec![
            vec![
                "alpha".to_string(),
                "in-process".to_string(),
                "3".to_string(),
            ],
            vec!["b".to_string(), "tmux".to_string(), "12".to_string()],
        ];
        assert_eq!(
            table(&["MEMBER", "BACKEND", "UNREAD"], &rows),
            [
                "MEMBER  BACKEND     UNREAD",
                "alpha   in-process       3",
                "b       tmux            12",
            ]
        );
    }
}
