//! `swarm task create | list | get | update | delete | claim`.

use super::{Context, Exit, print_acted, print_json};
use crate::cli::{StatusArg, TaskCmd, TaskUpdateArgs};
use crate::ops::TeamOps;
use crate::ops::board::Claimed;
use crate::tasks::{NewTask, Status, Task, TaskUpdate, TaskView};
use crate::team::Team;
use crate::text::{escape_line, escape_text};
use anyhow::{Result, bail};
use serde_json::json;
use serde_json::{Map, Value};
use std::io::Write as _;

pub fn run(ctx: &Context, cmd: TaskCmd) -> Result<Exit> {
    // Every task command needs the team to exist: a clear error beats an
    // empty list for a misspelt team.
    let ops = super::open::team_ops_here(ctx)?;
    let team = ops.team().clone();
    match cmd {
        TaskCmd::Create {
            subject,
            description,
            active_form,
            blocked_by,
            command,
            metadata,
            json,
        } => {
            let mut meta = parse_object(metadata.as_deref())?;
            if let Some(c) = command {
                meta.get_or_insert_with(Map::new)
                    .insert("command".into(), Value::String(c));
            }
            let task = ops.task_create(NewTask {
                subject,
                description,
                active_form,
                blocked_by: clean_ids(blocked_by),
                metadata: meta,
            })?;
            print_id_or_json(&task, json);
            Ok(Exit::Ok)
        }
        TaskCmd::List { json } => list(&ops, json),
        TaskCmd::Get { id, json } => match ops.task_get(&id) {
            Err(e) if is_missing(&e) => Ok(Exit::No(no_task(&team, &id))),
            Err(e) => Err(e),
            Ok(t) => {
                if json {
                    print_json(&t);
                } else {
                    print_task(&t);
                }
                Ok(Exit::Ok)
            }
        },
        TaskCmd::Update(args) => update(&ops, args),
        TaskCmd::Delete { id, json } => {
            if ops.task_delete(&id)? {
                if json {
                    print_acted(json!({ "deleted": id }));
                } else {
                    println!("deleted task {}", escape_line(&id));
                }
                Ok(Exit::Ok)
            } else {
                Ok(Exit::No(no_task(&team, &id)))
            }
        }
        TaskCmd::Claim {
            id,
            busy_check,
            json,
        } => match ops.task_claim(id.as_deref(), busy_check)? {
            Claimed::Task(task) => {
                print_id_or_json(&task, json);
                Ok(Exit::Ok)
            }
            Claimed::Nothing(why) => Ok(Exit::No(why)),
        },
    }
}

fn is_missing(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<crate::tasks::TaskError>(),
        Some(crate::tasks::TaskError::NotFound { .. })
    )
}

/// A task just made or claimed: its id, or with `--json` the envelope
/// holding the whole task.
fn print_id_or_json(task: &Task, json: bool) {
    if json {
        print_acted(json!({ "task": task }));
    } else {
        println!("{}", escape_line(&task.id));
    }
}

/// `swarm task list`: the board as a table (or JSON), with a warning for
/// each task file that did not read and was set aside.
fn list(ops: &TeamOps, json: bool) -> Result<Exit> {
    let (board, returned) = ops.task_board()?;
    for r in &returned {
        eprintln!("swarm: note: {}", escape_line(&r.line()));
    }
    for q in &board.quarantined {
        eprintln!(
            "swarm: warning: an unreadable task file was copied to {}",
            escape_line(&q.display().to_string())
        );
    }
    // Never freed: the command ends after printing, and freeing 10,000
    // tasks one by one would be a tenth of its time.
    if json {
        let list = std::mem::ManuallyDrop::new(board.into_list());
        print_json(&list.tasks);
        return Ok(Exit::Ok);
    }
    let board = std::mem::ManuallyDrop::new(board);
    if board.is_empty() {
        eprintln!("no tasks in team {}", escape_line(&ops.team().name));
    } else {
        // One write per screenful, not per row: a board of 10,000 tasks.
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        writeln!(
            out,
            "{:>4}  {:<11}  {:<16}  {:<10}  SUBJECT",
            "ID", "STATUS", "OWNER", "BLOCKED BY"
        )?;
        for t in board.iter() {
            write_row(&mut out, &t)?;
        }
        out.flush()?;
    }
    Ok(Exit::Ok)
}

fn update(ops: &TeamOps, args: TaskUpdateArgs) -> Result<Exit> {
    let upd = TaskUpdate {
        subject: args.subject,
        description: args.description,
        active_form: args.active_form,
        status: args.status.map(|s| match s {
            StatusArg::Pending => Status::Pending,
            StatusArg::InProgress => Status::InProgress,
            StatusArg::Completed => Status::Completed,
        }),
        owner: if args.unassign {
            Some(None)
        } else {
            args.owner.map(Some)
        },
        metadata: parse_object(args.metadata.as_deref())?,
        add_blocks: clean_ids(args.add_blocks),
        add_blocked_by: clean_ids(args.add_blocked_by),
    };
    let task = ops.task_update(&args.id, upd, args.force)?;
    if args.json {
        print_acted(json!({ "task": task }));
    } else {
        print_task(&task);
    }
    Ok(Exit::Ok)
}

/// The one wording of a missing task (the store's [`TaskError::NotFound`]).
fn no_task(team: &Team, id: &str) -> String {
    crate::tasks::TaskError::NotFound {
        team: team.name.clone(),
        id: id.to_string(),
        path: team.root.task(&team.name, id).unwrap_or_default(),
    }
    .to_string()
}

fn parse_object(text: Option<&str>) -> Result<Option<Map<String, Value>>> {
    let Some(text) = text else { return Ok(None) };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(_) => bail!("--metadata must be a JSON object, like '{{\"key\": \"value\"}}'"),
        Err(e) => bail!("--metadata is not valid JSON: {e}"),
    }
}

fn clean_ids(ids: Vec<String>) -> Vec<String> {
    ids.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The status a listing shows: the file's, except a task whose run failed
/// (pending, still owned, `metadata.failed`), shown `failed` as the
/// dialog and `swarm status` show it (one rule: `Task::failed`).
/// `--json` keeps the file's status, Claude Code's format.
fn status_str(t: &Task) -> &'static str {
    status_label(t.status, t.failed())
}

fn status_label(status: Status, failed: bool) -> &'static str {
    if failed {
        return "failed";
    }
    match status {
        Status::Pending => "pending",
        Status::InProgress => "in_progress",
        Status::Completed => "completed",
    }
}

/// One row of `task list`. Every field comes from a file anyone may have
/// written, so each is escaped.
fn write_row(out: &mut impl std::io::Write, t: &TaskView) -> std::io::Result<()> {
    let mut blocked = t.blocked_by().peekable();
    let blocked = if blocked.peek().is_none() {
        std::borrow::Cow::Borrowed("-")
    } else {
        std::borrow::Cow::Owned(blocked.collect::<Vec<_>>().join(","))
    };
    // Plain writes, not `write!`: its padding goes a char at a time, and
    // 10,000 rows notice.
    let mut cell = |s: &str, width: usize, right: bool| -> std::io::Result<()> {
        const SPACES: &[u8] = b"                ";
        let shown = if s.is_ascii() {
            s.len()
        } else {
            s.chars().count()
        };
        let pad = &SPACES[..width.saturating_sub(shown).min(SPACES.len())];
        if right {
            out.write_all(pad)?;
        }
        out.write_all(s.as_bytes())?;
        if !right {
            out.write_all(pad)?;
        }
        out.write_all(b"  ")
    };
    t.id().with(|id| cell(&escape_line(id), 4, true))?;
    cell(status_label(t.status(), t.failed()), 11, false)?;
    cell(&escape_line(t.owner().unwrap_or("-")), 16, false)?;
    cell(&escape_line(&blocked), 10, false)?;
    out.write_all(escape_line(t.subject()).as_bytes())?;
    out.write_all(b"\n")
}

fn print_task(t: &Task) {
    println!("task {}: {}", escape_line(&t.id), escape_line(&t.subject));
    println!("  status:     {}", status_str(t));
    println!(
        "  owner:      {}",
        escape_line(t.owner.as_deref().unwrap_or("-"))
    );
    if !t.blocked_by.is_empty() {
        println!("  blocked by: {}", escape_line(&t.blocked_by.join(", ")));
    }
    if !t.blocks.is_empty() {
        println!("  blocks:     {}", escape_line(&t.blocks.join(", ")));
    }
    if !t.description.is_empty() {
        println!(
            "  description:\n    {}",
            escape_text(&t.description).replace('\n', "\n    ")
        );
    }
    if let Some(m) = &t.metadata {
        // serde escapes C0 controls in JSON strings, but not C1 or bidi ones.
        println!(
            "  metadata:   {}",
            escape_line(&serde_json::to_string(m).unwrap_or_default())
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row as `format!` padded it before rows were written piecewise.
    fn padded(t: &Task) -> String {
        let blocked = if t.blocked_by.is_empty() {
            "-".to_string()
        } else {
            t.blocked_by.join(",")
        };
        format!(
            "{:>4}  {:<11}  {:<16}  {:<10}  {}\n",
            escape_line(&t.id),
            status_str(t),
            escape_line(t.owner.as_deref().unwrap_or("-")),
            escape_line(&blocked),
            escape_line(&t.subject)
        )
    }

    /// Issue 24, item 10: a task "failed" in the dialog was "pending" in
    /// `task list`.
    #[test]
    fn a_failed_task_is_failed_in_the_list_as_in_the_dialog() {
        let mut t = Task::new("4", "build");
        t.owner = Some("bob".into());
        let mut md = Map::new();
        md.insert("failed".into(), json!(true));
        t.metadata = Some(md);
        let mut out = Vec::new();
        write_row(&mut out, &TaskView::Task(&t)).unwrap();
        let row = String::from_utf8(out).unwrap();
        assert!(row.starts_with("   4  failed  "), "{row:?}");
        assert_eq!(status_str(&t), "failed");
        t.status = Status::InProgress;
        assert_eq!(status_str(&t), "in_progress", "running again");
    }

    #[test]
    fn a_row_is_padded_by_characters_and_escaped() {
        let mut plain = Task::new("7", "plain");
        plain.status = Status::InProgress;
        let mut wide = Task::new("12345", "sub\u{1b}[31mject\nline");
        wide.owner = Some("ünïcødé-owner-longer-than-16".into());
        wide.blocked_by = vec!["1".into(), "22".into(), "333".into(), "4444".into()];
        let mut odd = Task::new("3", "");
        odd.owner = Some("é\u{202e}x".into());
        for t in [&plain, &wide, &odd] {
            let mut out = Vec::new();
            write_row(&mut out, &TaskView::Task(t)).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), padded(t), "{t:?}");
        }
    }
}
