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
    // The common case, each entry shown as it is read and none kept. What
    // is shown goes to memory first and out when all are in: a file the one
    // pass does not take is read again below, what the pass showed of it is
    // dropped, and nothing is shown twice.
    let mut showing = Showing::new(&args);
    if !args.all && mailbox.read_each(&whose, |e| showing.take(e, false))? {
        return showing.end(&mailbox, &whose);
    }
    let mut showing = Showing::new(&args);
    let read = mailbox.read(&whose)?;
    warn_quarantine(&whose, read.quarantined.as_deref());
    // A message being consumed right now is shown once.
    let history = if args.all {
        mailbox.history_besides(&whose, &read.entries)?
    } else {
        Vec::new()
    };
    for e in &history {
        showing.take(e, true)?;
    }
    for e in &read.entries {
        showing.take(e, false)?;
    }
    let exit = showing.end(&mailbox, &whose);
    // The process ends next: freeing 10,000 entries one string at a time
    // was a tenth of printing them.
    std::mem::forget((history, read.entries));
    exit
}

/// What `swarm inbox` shows: the entries it takes (the inbox's filtered by
/// `--unread`; the history's, `consumed`, all), printed into memory, and
/// the keys of those `--mark-read` consumes once they are out.
struct Showing {
    printer: Printer<Vec<u8>>,
    keys: Vec<EntryKey>,
    unread: bool,
    mark_read: bool,
}

impl Showing {
    fn new(args: &InboxArgs) -> Showing {
        Showing {
            printer: Printer::new(Vec::new(), args.json),
            keys: Vec::new(),
            unread: args.unread,
            mark_read: args.mark_read,
        }
    }

    fn take(&mut self, e: &Entry, consumed: bool) -> std::io::Result<()> {
        if !consumed {
            if self.unread && !e.is_unread() {
                return Ok(());
            }
            if self.mark_read {
                self.keys.push(e.key());
            }
        }
        self.printer.push(e, consumed)
    }

    /// Writes what was shown out (one write, stdout being line-buffered),
    /// then consumes what `--mark-read` names.
    fn end(self, mailbox: &Mailbox, whose: &str) -> Result<Exit> {
        let mut out = std::io::stdout().lock();
        out.write_all(&self.printer.finish()?)?;
        out.flush()?;
        if !self.keys.is_empty() {
            mailbox.consume(whose, &self.keys)?;
        }
        Ok(Exit::Ok)
    }
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

/// Entries shown one at a time into `out`: for people, or (`--json`) as
/// one pretty JSON array, an entry of the history with `consumed: true`.
struct Printer<W: Write> {
    out: W,
    json: bool,
    count: usize,
    /// One entry's JSON, reused.
    scratch: Vec<u8>,
}

impl<W: Write> Printer<W> {
    fn new(out: W, json: bool) -> Self {
        Printer {
            out,
            json,
            count: 0,
            scratch: Vec::new(),
        }
    }

    fn push(&mut self, entry: &Entry, consumed: bool) -> std::io::Result<()> {
        self.count += 1;
        if !self.json {
            return render_to(&mut self.out, entry, consumed);
        }
        // The array's layout, an element at a time: each entry pretty, one
        // level in (what `to_writer_pretty` of the whole array writes), made
        // whole in `scratch`, then copied line by line with the indent.
        self.scratch.clear();
        serde_json::to_writer_pretty(&mut self.scratch, &Shown { entry, consumed })
            .map_err(std::io::Error::other)?;
        self.out
            .write_all(if self.count == 1 { b"[\n  " } else { b",\n  " })?;
        // A line break inside a JSON string is written `\n`: every one in
        // `scratch` is the layout's.
        let mut lines = self.scratch.split(|&b| b == b'\n');
        self.out.write_all(lines.next().unwrap_or_default())?;
        for line in lines {
            self.out.write_all(b"\n  ")?;
            self.out.write_all(line)?;
        }
        Ok(())
    }

    /// Ends what was shown; says "no messages" (on stderr) when it was
    /// nothing, for people.
    fn finish(mut self) -> std::io::Result<W> {
        match (self.json, self.count) {
            (true, 0) => self.out.write_all(b"[]\n")?,
            (true, _) => self.out.write_all(b"\n]\n")?,
            (false, 0) => eprintln!("no messages"),
            (false, _) => {}
        }
        Ok(self.out)
    }
}

/// An entry as `--json` shows it: its keys, then `consumed: true` for one
/// from the history.
struct Shown<'a> {
    entry: &'a Entry,
    consumed: bool,
}

impl serde::Serialize for Shown<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        // The entry's own keys, in its order (no `flatten`, whose buffering
        // made `--json` slower than the text).
        let mut m = s.serialize_map(None)?;
        self.entry.serialize_fields(&mut m)?;
        if self.consumed {
            m.serialize_entry("consumed", &true)?;
        }
        m.end()
    }
}

/// One entry for people, written to `out` piece by piece: a header line,
/// then the text (protocol messages as one readable line, not raw JSON),
/// nothing in it a terminal would obey; each line ends in `\n`.
fn render_to(out: &mut impl Write, e: &Entry, consumed: bool) -> std::io::Result<()> {
    let tag = if consumed || !e.is_unread() {
        " (read)"
    } else {
        ""
    };
    write!(
        out,
        "{} from {}{}:\n  ",
        escape_line(&e.timestamp),
        escape_line(&e.from),
        tag
    )?;
    match e.protocol() {
        Some(msg) => writeln!(out, "[{}]", escape_line(&msg.one_line())),
        None => {
            let body = escape_text(&e.text);
            let mut lines = body.split('\n');
            out.write_all(lines.next().unwrap_or_default().as_bytes())?;
            for line in lines {
                out.write_all(b"\n  ")?;
                out.write_all(line.as_bytes())?;
            }
            out.write_all(b"\n")
        }
    }
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
        render_to(&mut out, e, consumed)?;
    }
    out.flush()?;
    Ok(())
}
