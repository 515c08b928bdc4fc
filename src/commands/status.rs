//! `swarm status`: the team's snapshot ([`crate::ops::TeamSnapshot`]) as a
//! table, or with `--json` as one JSON object (the same object `team_status`
//! returns over MCP).

use super::{Context, Exit, print_json};
use crate::cli::StatusArgs;
use crate::ops::TeamOps;
use crate::ops::snapshot::{MemberSnapshot, TeamSnapshot};
use crate::team::RosterError;
use crate::text::escape_line;
use anyhow::Result;

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

fn member_row(m: &MemberSnapshot) -> Vec<String> {
    let or_dash =
        |v: Option<&str>| escape_line(v.filter(|s| !s.is_empty()).unwrap_or("-")).into_owned();
    let attention = m
        .attention
        .as_ref()
        .map_or_else(|| "-".to_owned(), |a| format!("! {}", escape_line(a)));
    let progress = m.progress.as_ref().map_or_else(
        || "-".to_owned(),
        |p| {
            let elapsed = p
                .elapsed_secs
                .map(|s| crate::clock::age(std::time::Duration::from_secs(s)))
                .unwrap_or_default();
            match &p.last_line {
                Some(l) => format!("{elapsed} › {}", escape_line(l)),
                None => elapsed,
            }
        },
    );
    vec![
        escape_line(&m.name).into_owned(),
        or_dash(m.color.as_deref()),
        m.status.clone().unwrap_or_else(|| "-".to_string()),
        or_dash(Some(m.pane_id.as_str())),
        or_dash(m.backend_type.as_deref()),
        m.unread.to_string(),
        escape_line(&worktree_line(&m.worktree)).into_owned(),
        attention,
        progress,
    ]
}

/// The WORKTREE cell: the branch and its progress, from the snapshot's
/// JSON of it (`-` without a worktree).
fn worktree_line(w: &serde_json::Value) -> String {
    w.get("line")
        .and_then(|l| l.as_str())
        .unwrap_or("-")
        .to_string()
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

/// "lead: running (pid 12) · backend tmux · tmux session swarm-t ·
/// socket /tmp/sock", or how to take the team back.
fn where_line(snap: &TeamSnapshot) -> String {
    let lead = match (snap.lead.alive, snap.lead.pid) {
        (true, Some(pid)) => format!("lead: running (pid {pid})"),
        (true, None) => "lead: running".to_string(),
        (false, _) => format!(
            "lead: not running (`swarm up --team {}` takes the team back)",
            snap.team
        ),
    };
    let mut parts = vec![lead];
    if let Some(b) = snap.backend {
        parts.push(format!("backend {b}"));
    }
    if let Some(s) = &snap.tmux_session {
        parts.push(format!("tmux session {s}"));
    }
    if let Some(sock) = &snap.tmux_socket {
        parts.push(format!("socket {}", sock.display()));
    }
    parts.join(" · ")
}

pub fn run(ctx: &Context, args: StatusArgs) -> Result<Exit> {
    let ops = TeamOps::new(
        super::open::location(ctx, &ctx.team_name()?, &args.backend),
        crate::names::LEAD_NAME,
    );
    let rt = crate::session::runtime()?;
    let snap = match rt.block_on(ops.snapshot()) {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.downcast_ref::<RosterError>(),
                Some(RosterError::NotFound { .. })
            ) =>
        {
            return Ok(Exit::No(e.to_string()));
        }
        Err(e) => return Err(e),
    };
    for w in &snap.warnings {
        eprintln!("swarm: warning: {}", escape_line(w));
    }
    if args.json {
        print_json(&snap);
        return Ok(Exit::Ok);
    }
    // Everything below comes from files anyone may have written.
    println!(
        "team {} ({})",
        escape_line(&snap.team),
        escape_line(&snap.root.display().to_string())
    );
    println!("{}", escape_line(&where_line(&snap)));
    let rows: Vec<Vec<String>> = snap.members.iter().map(member_row).collect();
    for line in table(&HEADER, &rows) {
        println!("{line}");
    }
    let t = &snap.tasks;
    println!(
        "tasks: {}/{} completed · {} in progress · {} pending",
        t.completed, t.total, t.in_progress, t.pending
    );
    for r in &snap.requests {
        println!(
            "request {} ({}) from {} to {}: {}",
            escape_line(&r.id),
            serde_json::to_value(r.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            escape_line(&r.from),
            escape_line(&r.to),
            r.summary
        );
    }
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
