//! `swarm inbox`: show, consume and follow a member's inbox.
//!
//! Showing is not consuming: only `--mark-read` removes the shown messages
//! (by identity, after they were printed) into the member's history, so a
//! message that arrives while the command runs is never consumed unseen.

use super::{Context, Exit};
use crate::cli::InboxArgs;
use crate::mailbox::{Entry, EntryKey, Mailbox, Since, Tail};
use crate::text::{escape_line, escape_text};
use anyhow::{Context as _, Result};
use std::collections::HashSet;
use std::io::Write;
use std::time::Duration;

pub fn run(ctx: &Context, args: InboxArgs) -> Result<Exit> {
    let whose = match args.name.clone() {
        Some(n) => n,
        None => ctx.me()?.to_string(),
    };
    // The team must exist; a name off the roster is allowed (an inbox may
    // outlive its member) but said.
    let ops = super::open::team_ops_here(ctx)?;
    let team = ops.team().clone();
    if args.mark_read {
        ops.require_own("consume its mail (--mark-read)")?;
    }
    let members = ops.member_names()?;
    if !members.contains(&whose) {
        eprintln!(
            "swarm: note: {} is not on the roster of team {} (members: {})",
            escape_line(&format!("{whose:?}")),
            escape_line(&team.name),
            escape_line(&members.join(", "))
        );
    }
    let mailbox = team.mailbox();
    if args.follow {
        return follow(&mailbox, &whose, &args);
    }
    let mut shown: Vec<(Entry, bool)> = Vec::new();
    let read = mailbox.read(&whose)?;
    warn_quarantine(&whose, read.quarantined.as_deref());
    if args.all {
        // A message being consumed right now is shown once.
        shown.extend(
            mailbox
                .history_besides(&whose, &read.entries)?
                .into_iter()
                .map(|e| (e, true)),
        );
    }
    let current: Vec<Entry> = read
        .entries
        .into_iter()
        .filter(|e| !args.unread || e.is_unread())
        .collect();
    let keys: Vec<EntryKey> = if args.mark_read {
        current.iter().map(Entry::key).collect()
    } else {
        Vec::new()
    };
    shown.extend(current.into_iter().map(|e| (e, false)));
    print_entries(&shown, args.json)?;
    if args.mark_read && !keys.is_empty() {
        mailbox.consume(&whose, &keys)?;
    }
    Ok(Exit::Ok)
}

fn warn_quarantine(whose: &str, q: Option<&std::path::Path>) {
    if let Some(q) = q {
        eprintln!(
            "swarm: warning: the inbox of {} was unreadable; its bytes were copied to {} and a fresh inbox continues",
            escape_line(whose),
            escape_line(&q.display().to_string())
        );
    }
}

fn print_entries(entries: &[(Entry, bool)], json: bool) -> Result<()> {
    // One write per 64 KiB, not per line (stdout is line-buffered).
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    if json {
        // Written as it is serialized: no tree of values built first.
        let shown: Vec<Shown<'_>> = entries
            .iter()
            .map(|(entry, consumed)| Shown {
                entry,
                consumed: *consumed,
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &shown)?;
        writeln!(out)?;
        out.flush()?;
        return Ok(());
    }
    if entries.is_empty() {
        eprintln!("no messages");
    }
    for (e, consumed) in entries {
        writeln!(out, "{}", render(e, *consumed))?;
    }
    out.flush()?;
    Ok(())
}

/// An entry as `--json` shows it: its keys, then `consumed: true` for one
/// from the history.
#[derive(serde::Serialize)]
struct Shown<'a> {
    #[serde(flatten)]
    entry: &'a Entry,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    consumed: bool,
}

/// One entry for people: a header line, then the text (protocol messages as
/// one readable line, not raw JSON), nothing in it a terminal would obey.
pub fn render(e: &Entry, consumed: bool) -> String {
    let tag = if consumed || !e.is_unread() {
        " (read)"
    } else {
        ""
    };
    let body = match e.protocol() {
        Some(msg) => format!("[{}]", escape_line(&msg.one_line())),
        None => escape_text(&e.text).replace('\n', "\n  "),
    };
    format!(
        "{} from {}{}:\n  {}",
        escape_line(&e.timestamp),
        escape_line(&e.from),
        tag,
        body
    )
}

fn follow(mailbox: &Mailbox, whose: &str, args: &InboxArgs) -> Result<Exit> {
    let watcher = mailbox.watch().context("watching the inbox directory")?;
    let mut seen: HashSet<EntryKey> = HashSet::new();
    if args.all {
        for e in mailbox.history(whose)? {
            seen.insert(e.message_key());
            emit(&e, true, args.json)?;
        }
    }
    // Each wake-up parses only what was appended since the previous read
    // (a send), the whole inbox only when it changed otherwise.
    let mut tail = Tail::default();
    let file = mailbox.inbox_path(whose)?;
    let file = file.file_name().unwrap_or_default().to_owned();
    loop {
        let new = match mailbox.read_since(whose, &mut tail)? {
            Since::Same => Vec::new(),
            Since::Appended(added) => added,
            Since::Whole(read) => {
                warn_quarantine(whose, read.quarantined.as_deref());
                read.entries
            }
        };
        let mut fresh = Vec::new();
        for e in new {
            if (args.unread && !e.is_unread()) || !seen.insert(e.message_key()) {
                continue;
            }
            emit(&e, false, args.json)?;
            fresh.push(e.key());
        }
        if args.mark_read && !fresh.is_empty() {
            mailbox.consume(whose, &fresh)?;
        }
        watcher.wait_for(&file, Duration::from_secs(5));
    }
}

fn emit(e: &Entry, consumed: bool, json: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        let mut v = serde_json::to_value(e).expect("entry serializes");
        if consumed {
            v["consumed"] = serde_json::Value::Bool(true);
        }
        writeln!(out, "{}", serde_json::to_string(&v)?)?;
    } else {
        writeln!(out, "{}", render(e, consumed))?;
    }
    out.flush()?;
    Ok(())
}
