//! The board index: every task of a team as last read, with the `stat`
//! stamp of its file, in one binary file of swarm's own
//! (`<root>/swarm/.board/<team>.index`, [`crate::paths::Root::board_index`]),
//! so `task list`, `status` and a claim without id need not open and parse
//! 10,000 task files on every call.
//!
//! The index is a cache: it is never the truth, only a faster way to it,
//! and it is trusted whole only when that is provably safe.
//!
//! * **Whole** (no file looked at): when the task directory's own stamp
//!   (device, inode, modification and change times) is the one the index
//!   was taken at, and that stamp was *settled* then (see below). Every
//!   writer of a task file changes the directory after its write: swarm
//!   replaces files by rename; Claude Code writes in place, but only while
//!   it holds the lock directory `<id>.json.lock` (or `.lock.lock` to
//!   create), which it makes before and removes after the write (see the
//!   reference, §5). A delete unlinks. So a directory whose stamp has not
//!   moved has had no task written since the index was taken. A writer that
//!   bypasses both (a hand edit in place) is caught by an age bound: the
//!   whole index is trusted for [`WHOLE_FOR`] only.
//! * **Per file** otherwise: one `stat` per task file, and only files whose
//!   stamp moved (or was not settled) are read and parsed again.
//! * **Settled**: a stamp whose change time is at least one timestamp
//!   granule older than the moment the scan began ([`settled`]). A write in
//!   the same granule as an earlier one can leave the stamp unchanged (the
//!   "racy git" problem); an unsettled stamp is therefore never trusted, and
//!   the file or directory is looked at again next time.
//!
//! Writes of the index are atomic but not durable ([`write_cache`]), and
//! a look maps it rather than reading it ([`map_cache`]): a torn
//! or foreign file fails [`Index::decode`] (magic, lengths, UTF-8, the
//! trailer) and is simply rebuilt. Claims never decide from the index: it
//! only suggests candidates (its open tasks, [`Index::open`], read without
//! decoding the rest), each then checked on a fresh read under its lock
//! (`store/claim.rs`).
//!
//! [`write_cache`]: crate::atomic_file::write_cache
//! [`map_cache`]: crate::atomic_file::map_cache

use super::cache::Stamp;
use super::task::{Status, Task};
use serde_json::{Map, Value};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Version 3: the head holds the team watcher's point the index is the
/// board at (`crate::tasks::sync`); version 2 added whether an open task
/// carries a command. An index of another version is rebuilt.
const MAGIC: &[u8; 8] = b"SWBIDX03";
const TRAILER: &[u8; 8] = b"SWBIDEND";

/// How long a whole index is trusted without looking at any file, so that
/// a write that changed no directory (a hand edit in place) shows this late
/// at worst.
pub const WHOLE_FOR: Duration = Duration::from_secs(2);

/// A filesystem with nanosecond times: the granule is the kernel's clock
/// tick (at most 10 ms); this leaves room for it.
pub(crate) const FINE_GRANULE: Duration = Duration::from_millis(50);
/// A time with no nanoseconds may come from a filesystem that keeps whole
/// seconds (or two, FAT's): assume the coarsest.
const COARSE_GRANULE: Duration = Duration::from_secs(2);

/// Nanoseconds since the epoch, on the clock file times are taken from.
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Whether a stamp that last changed at `changed` (seconds, nanoseconds)
/// can be trusted by a scan that began at `scan_began_ns`: no later write
/// can have left it as it is.
pub fn settled(changed: (i64, i64), scan_began_ns: i64) -> bool {
    let granule = if changed.1 == 0 {
        COARSE_GRANULE
    } else {
        FINE_GRANULE
    };
    let changed_ns = i128::from(changed.0) * 1_000_000_000 + i128::from(changed.1);
    changed_ns + granule.as_nanos() as i128 <= i128::from(scan_began_ns)
}

/// Of one indexed task: the stamp of the file it was read from (taken
/// before the read), and whether that stamp was settled then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub id: u64,
    pub stamp: Stamp,
    pub settled: bool,
}

/// A decoded index.
#[derive(Debug, Clone, PartialEq)]
pub struct Index {
    /// The directory's stamp, taken before its names were read.
    pub dir: Stamp,
    /// `dir` was settled when the scan began.
    pub dir_settled: bool,
    /// When the scan began.
    pub began_ns: i64,
    /// The team watcher's `(epoch, seq)` this index is the board at
    /// (`crate::tasks::sync`); epoch 0: none.
    pub at: (u64, u64),
    /// In id order (kept apart from `seen`, so that the whole board is
    /// handed out without moving each task again).
    pub tasks: Vec<Task>,
    /// `seen[i]` is of `tasks[i]`.
    pub seen: Vec<Seen>,
}

/// A task that was claimable (pending, ownerless, no open blocker) when the
/// index was taken, with the stamp of the file it was read from if that
/// stamp was settled: a claim without id tries these first, in id order,
/// re-checking each under its lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    pub id: u64,
    pub seen: Option<Stamp>,
    /// It carries a command ([`Task::command`]): a shell teammate takes it.
    pub command: bool,
}

/// A task that was not completed when the index was taken: a candidate,
/// or one that could become claimable later (blocked, owned, in
/// progress), with its blockers. A claim without id that takes a
/// candidate first makes sure no such task below it has changed, nor any
/// of their blockers, so it still takes the lowest claimable id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Open {
    pub id: u64,
    pub seen: Option<Stamp>,
    pub claimable: bool,
    /// It carries a command ([`Task::command`]).
    pub command: bool,
    /// For a pending, ownerless task that was blocked: the ids of its
    /// `blockedBy` (numeric ones); empty for every other.
    pub blockers: Vec<u64>,
}

impl Index {
    /// The index's bytes, from its parts (the tasks by reference, so a
    /// scan need not copy them).
    pub fn encode<'a>(
        dir: Stamp,
        dir_settled: bool,
        began_ns: i64,
        at: (u64, u64),
        entries: impl ExactSizeIterator<Item = (Stamp, bool, &'a Task)>,
    ) -> Vec<u8> {
        let entries: Vec<_> = entries.collect();
        let mut out = Vec::with_capacity(80 + entries.len() * 192);
        out.extend_from_slice(MAGIC);
        put_i64(&mut out, began_ns);
        for w in dir.words() {
            put_i64(&mut out, w);
        }
        out.push(u8::from(dir_settled));
        put_u64(&mut out, at.0);
        put_u64(&mut out, at.1);
        let status_of = |b: &str| {
            let n = super::task::parse_id(b)?;
            let at = entries.binary_search_by_key(&n, |e| e.2.number()).ok()?;
            Some(entries[at].2.status)
        };
        let open: Vec<_> = entries
            .iter()
            .filter(|e| e.2.status != Status::Completed)
            .collect();
        put_u64(&mut out, open.len() as u64);
        for (stamp, settled, task) in open {
            let claimable = super::rules::is_claimable(task, status_of);
            put_u64(&mut out, task.number());
            out.push(
                u8::from(*settled)
                    | u8::from(claimable) << 1
                    | u8::from(task.command().is_some()) << 2,
            );
            for w in stamp.words() {
                put_i64(&mut out, w);
            }
            // A blocked task waits for these; others are not waiting.
            let blocked = !claimable && task.status == Status::Pending && task.owner.is_none();
            let blockers: Vec<u64> = if !blocked {
                Vec::new()
            } else {
                task.blocked_by
                    .iter()
                    .filter_map(|b| super::task::parse_id(b))
                    .collect()
            };
            out.extend_from_slice(&(blockers.len() as u32).to_le_bytes());
            for b in blockers {
                put_u64(&mut out, b);
            }
        }
        put_u64(&mut out, entries.len() as u64);
        for (stamp, settled, task) in entries {
            put_entry(&mut out, stamp, settled, task);
        }
        let len = out.len() as u64 + 16;
        put_u64(&mut out, len);
        out.extend_from_slice(TRAILER);
        out
    }

    /// Whether the index in `bytes` is the board as it is now, with the
    /// directory's stamp `now` read at `now_ns`, from its head alone: a
    /// per-file look then decodes the tasks beside its listing instead of
    /// before it. (A whole index is then decoded, which checks its frame.)
    pub fn whole_in(bytes: &[u8], now: Stamp, now_ns: i64) -> bool {
        let head = bytes
            .strip_prefix(MAGIC)
            .and_then(|rest| Reader { rest }.head());
        head.is_some_and(|h| whole(h.dir_settled, h.dir, h.began_ns, now, now_ns))
    }

    /// The team watcher's point the index in `bytes` is the board at, from
    /// its head alone (`None`: not an index of this version).
    pub fn at_in(bytes: &[u8]) -> Option<(u64, u64)> {
        let head = bytes
            .strip_prefix(MAGIC)
            .and_then(|rest| Reader { rest }.head())?;
        Some(head.at)
    }

    /// `None` for anything that is not a whole index of this version.
    pub fn decode(bytes: &[u8]) -> Option<Index> {
        let (mut r, head, count) = Reader::entries(bytes)?;
        let mut tasks = Vec::with_capacity(count);
        let mut seen = Vec::with_capacity(count);
        for _ in 0..count {
            let (s, t) = r.entry()?;
            seen.push(s);
            tasks.push(t);
        }
        if !r.rest.is_empty() {
            return None;
        }
        Some(Index {
            dir: head.dir,
            dir_settled: head.dir_settled,
            began_ns: head.began_ns,
            at: head.at,
            tasks,
            seen,
        })
    }

    /// Only when the index in `file` was taken and the tasks not completed
    /// then, without decoding the tasks: what a claim without id needs. The
    /// frame is checked at the file's end, and only as much of its start is
    /// read as the open tasks take (64 KB holds about 900).
    pub fn open_in(file: &File) -> Option<(i64, Vec<Open>)> {
        let size = file.metadata().ok()?.len();
        let mut tail = [0u8; 16];
        file.read_exact_at(&mut tail, size.checked_sub(16)?).ok()?;
        let (len, trailer) = tail.split_at(8);
        if trailer != TRAILER || u64::from_le_bytes(len.try_into().ok()?) != size {
            return None;
        }
        let body = size - 16;
        let mut want = 64 * 1024;
        loop {
            let mut start = vec![0u8; usize::try_from(want.min(body)).ok()?];
            file.read_exact_at(&mut start, 0).ok()?;
            let mut r = Reader {
                rest: start.strip_prefix(MAGIC)?,
            };
            let head = r.head()?;
            if let Some(open) = r.open_tasks() {
                return Some((head.began_ns, open));
            }
            if want >= body {
                return None;
            }
            want *= 8;
        }
    }
}

/// The tasks of an index, checked whole once ([`Rows::of`]) and then read
/// in place, one [`Row`] at a time, without decoding them into [`Task`]s:
/// a one-shot look at 10,000 tasks (`status`, `task list`) spent most of
/// its time allocating and filling fresh memory for tasks it printed once
/// or only counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rows {
    /// Where the first entry starts in the index's bytes.
    start: usize,
    count: usize,
}

impl Rows {
    /// The rows of the index in `bytes`, every entry checked (bounds,
    /// UTF-8, its objects' JSON) as [`Index::decode`] would; `None` for
    /// anything it would refuse.
    pub fn of(bytes: &[u8]) -> Option<Rows> {
        let (mut r, _, count) = Reader::entries(bytes)?;
        // The entries end 16 bytes before the bytes do (length, trailer).
        let start = bytes.len() - 16 - r.rest.len();
        for _ in 0..count {
            r.row_fields()?.1.check()?;
        }
        r.rest.is_empty().then_some(Rows { start, count })
    }

    pub fn len(&self) -> usize {
        self.count
    }

    /// The rows, in id order, of the `bytes` they were checked in.
    pub fn iter<'a>(&self, bytes: &'a [u8]) -> impl Iterator<Item = Row<'a>> + use<'a> {
        let mut r = Reader {
            rest: bytes
                .get(self.start..bytes.len().saturating_sub(16))
                .unwrap_or_default(),
        };
        (0..self.count).map_while(move |_| r.row())
    }
}

/// One task of an index as it lies in the index's bytes: only its id and
/// status are read until more is asked for (a count of the board reads
/// nothing else, and a row this small is cheap to hand along). Its text
/// was checked as UTF-8 by [`Rows::of`] (or by the decode it came from).
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    pub id: u64,
    pub status: Status,
    settled: bool,
    /// Its file's stamp (7 words), then its fields ([`Fields`]).
    rest: &'a [u8],
}

/// A row's fields, found in its bytes.
#[derive(Debug, Clone, Copy)]
struct Fields<'a> {
    subject: &'a [u8],
    description: &'a [u8],
    active_form: Option<&'a [u8]>,
    owner: Option<&'a [u8]>,
    blocks: Strs<'a>,
    blocked_by: Strs<'a>,
    metadata: Option<&'a [u8]>,
    extra: Option<&'a [u8]>,
}

/// Checked text, as text (never fails on a checked row: see [`Row`]).
fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or_default()
}

impl<'a> Row<'a> {
    /// What was seen of it: its file's stamp, and whether it was settled.
    pub fn seen(&self) -> Seen {
        let stamp = Reader { rest: self.rest }
            .stamp()
            .unwrap_or(Stamp::from_words([0; 7]));
        Seen {
            id: self.id,
            stamp,
            settled: self.settled,
        }
    }

    /// Its fields (found when the row was read: never absent).
    fn fields(&self) -> Fields<'a> {
        let mut r = Reader {
            rest: self.rest.get(ROW_FIELDS_AT..).unwrap_or_default(),
        };
        r.fields().unwrap_or(Fields {
            subject: b"",
            description: b"",
            active_form: None,
            owner: None,
            blocks: Strs::EMPTY,
            blocked_by: Strs::EMPTY,
            metadata: None,
            extra: None,
        })
    }

    pub fn subject(&self) -> &'a str {
        text(self.fields().subject)
    }

    pub fn owner(&self) -> Option<&'a str> {
        self.fields().owner.map(text)
    }

    pub fn blocked_by(&self) -> Strs<'a> {
        self.fields().blocked_by
    }

    /// The task, decoded.
    pub fn task(&self) -> Task {
        self.task_of(self.fields())
    }

    /// The task, decoded from its fields `f` (already found).
    fn task_of(&self, f: Fields<'a>) -> Task {
        let object = |o: Option<&[u8]>| o.and_then(|o| serde_json::from_slice(o).ok());
        let owned = |o: Option<&[u8]>| o.map(|o| text(o).to_owned());
        Task {
            id: decimal(self.id),
            subject: text(f.subject).to_owned(),
            description: text(f.description).to_owned(),
            active_form: owned(f.active_form),
            owner: owned(f.owner),
            status: self.status,
            blocks: f.blocks.map(str::to_owned).collect(),
            blocked_by: f.blocked_by.map(str::to_owned).collect(),
            metadata: object(f.metadata),
            extra: object(f.extra).unwrap_or_default(),
        }
    }

    /// A pending task its runner marked failed (`metadata.failed`), as
    /// [`Task::failed`] says of the decoded task.
    pub fn failed(&self) -> bool {
        self.status == Status::Pending
            && self.fields().metadata.is_some_and(|m| {
                serde_json::from_slice::<Map<String, Value>>(m)
                    .ok()
                    .and_then(|m| m.get("failed").and_then(Value::as_bool))
                    == Some(true)
            })
    }
}

impl Fields<'_> {
    /// Its text is UTF-8 and its objects parse.
    fn check(&self) -> Option<()> {
        let texts = [self.subject, self.description]
            .into_iter()
            .chain(self.active_form)
            .chain(self.owner);
        for t in texts {
            std::str::from_utf8(t).ok()?;
        }
        for list in [self.blocks, self.blocked_by] {
            for t in list.raw() {
                std::str::from_utf8(t).ok()?;
            }
        }
        for o in [self.metadata, self.extra].into_iter().flatten() {
            serde_json::from_slice::<Map<String, Value>>(o).ok()?;
        }
        Some(())
    }
}

/// Where a row's fields start in its bytes: after the stamp (7 words),
/// whether it was settled and its status (a byte each).
const ROW_FIELDS_AT: usize = 7 * 8 + 2;

/// A list of strings as it lies in the index (its bounds found when it
/// was read; its text checked as a [`Row`]'s is).
#[derive(Debug, Clone, Copy)]
pub struct Strs<'a> {
    left: usize,
    rest: &'a [u8],
}

impl<'a> Strs<'a> {
    const EMPTY: Strs<'static> = Strs { left: 0, rest: b"" };

    /// The items' bytes.
    fn raw(self) -> impl Iterator<Item = &'a [u8]> {
        let mut r = Reader { rest: self.rest };
        (0..self.left).map_while(move |_| r.bytes())
    }
}

impl<'a> Iterator for Strs<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        self.left = self.left.checked_sub(1)?;
        let mut r = Reader { rest: self.rest };
        let item = r.bytes()?;
        self.rest = r.rest;
        Some(text(item))
    }
}

/// An index taken at `began_ns` of a directory stamped `dir` (settled
/// then or not) is the board now, when the directory is stamped `now` at
/// `now_ns`.
fn whole(dir_settled: bool, dir: Stamp, began_ns: i64, now: Stamp, now_ns: i64) -> bool {
    dir_settled
        && dir == now
        && now_ns >= began_ns
        && (now_ns - began_ns) as u128 <= WHOLE_FOR.as_nanos()
}

/// The fixed part at the start of an index.
struct Head {
    began_ns: i64,
    dir: Stamp,
    dir_settled: bool,
    at: (u64, u64),
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_opt(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            put_str(out, s);
        }
    }
}

fn put_list(out: &mut Vec<u8>, items: &[String]) {
    out.extend_from_slice(&(items.len() as u32).to_le_bytes());
    for i in items {
        put_str(out, i);
    }
}

fn put_entry(out: &mut Vec<u8>, stamp: Stamp, settled: bool, t: &Task) {
    put_u64(out, t.number());
    for w in stamp.words() {
        put_i64(out, w);
    }
    out.push(u8::from(settled));
    out.push(match t.status {
        Status::Pending => 0,
        Status::InProgress => 1,
        Status::Completed => 2,
    });
    put_str(out, &t.subject);
    put_str(out, &t.description);
    put_opt(out, t.active_form.as_deref());
    put_opt(out, t.owner.as_deref());
    put_list(out, &t.blocks);
    put_list(out, &t.blocked_by);
    let json = |m: &Map<String, Value>| serde_json::to_string(m).unwrap_or_default();
    put_opt(out, t.metadata.as_ref().map(json).as_deref());
    put_opt(
        out,
        (!t.extra.is_empty()).then(|| json(&t.extra)).as_deref(),
    );
}

/// A cursor over the index's bytes; every read checks its bounds.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Checks the frame (magic, length, trailer) and reads the head.
    fn open(bytes: &'a [u8]) -> Option<(Reader<'a>, Head)> {
        let body = bytes.strip_suffix(TRAILER)?;
        let (body, len) = body.split_at_checked(body.len().checked_sub(8)?)?;
        if u64::from_le_bytes(len.try_into().ok()?) != bytes.len() as u64 {
            return None;
        }
        let mut r = Reader {
            rest: body.strip_prefix(MAGIC)?,
        };
        let head = r.head()?;
        Some((r, head))
    }

    /// [`open`](Self::open), then past the open tasks to the first entry:
    /// the reader there, the head, and how many entries there are.
    fn entries(bytes: &'a [u8]) -> Option<(Reader<'a>, Head, usize)> {
        let (mut r, head) = Reader::open(bytes)?;
        r.skip_open_tasks()?;
        let count = usize::try_from(r.u64()?).ok()?;
        // Each entry takes more than 64 bytes: a count past that is garbage.
        if count > r.rest.len() / 64 {
            return None;
        }
        Some((r, head, count))
    }

    fn head(&mut self) -> Option<Head> {
        Some(Head {
            began_ns: self.i64()?,
            dir: self.stamp()?,
            dir_settled: self.flag()?,
            at: (self.u64()?, self.u64()?),
        })
    }

    fn open_tasks(&mut self) -> Option<Vec<Open>> {
        let count = usize::try_from(self.u64()?).ok()?;
        if count > self.rest.len() / 69 {
            return None;
        }
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let id = self.u64()?;
            let flags = self.take(1)?[0];
            if flags > 7 {
                return None;
            }
            let stamp = self.stamp()?;
            let n = self.u32()?;
            if n > self.rest.len() / 8 {
                return None;
            }
            let blockers = (0..n).map(|_| self.u64()).collect::<Option<_>>()?;
            out.push(Open {
                id,
                seen: (flags & 1 == 1).then_some(stamp),
                claimable: flags & 2 == 2,
                command: flags & 4 == 4,
                blockers,
            });
        }
        Some(out)
    }

    /// Past the open tasks, reading nothing of them.
    fn skip_open_tasks(&mut self) -> Option<()> {
        let count = usize::try_from(self.u64()?).ok()?;
        for _ in 0..count {
            // Id, flags (as `open_tasks` reads them), stamp; then the
            // blockers.
            if self.take(9)?[8] > 7 {
                return None;
            }
            self.take(7 * 8)?;
            let n = self.u32()?;
            self.take(n.checked_mul(8)?)?;
        }
        Some(())
    }

    /// A string's bytes (its length first).
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()?;
        self.take(n)
    }

    fn opt_bytes(&mut self) -> Option<Option<&'a [u8]>> {
        Some(if self.flag()? {
            Some(self.bytes()?)
        } else {
            None
        })
    }

    fn strs(&mut self) -> Option<Strs<'a>> {
        let left = self.u32()?;
        let rest = self.rest;
        for _ in 0..left {
            self.bytes()?;
        }
        Some(Strs { left, rest })
    }

    /// The next entry, in place: its fields found, not read.
    fn row(&mut self) -> Option<Row<'a>> {
        Some(self.row_fields()?.0)
    }

    /// The next entry and its fields.
    fn row_fields(&mut self) -> Option<(Row<'a>, Fields<'a>)> {
        let id = self.u64()?;
        let rest = self.rest;
        self.take(7 * 8)?;
        let settled = self.flag()?;
        let status = status_of(self.take(1)?[0])?;
        let fields = self.fields()?;
        let len = rest.len() - self.rest.len();
        let row = Row {
            id,
            status,
            settled,
            rest: &rest[..len],
        };
        Some((row, fields))
    }

    fn fields(&mut self) -> Option<Fields<'a>> {
        Some(Fields {
            subject: self.bytes()?,
            description: self.bytes()?,
            active_form: self.opt_bytes()?,
            owner: self.opt_bytes()?,
            blocks: self.strs()?,
            blocked_by: self.strs()?,
            metadata: self.opt_bytes()?,
            extra: self.opt_bytes()?,
        })
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.rest.split_at_checked(n)?;
        self.rest = rest;
        Some(head)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn u32(&mut self) -> Option<usize> {
        usize::try_from(u32::from_le_bytes(self.take(4)?.try_into().ok()?)).ok()
    }

    fn stamp(&mut self) -> Option<Stamp> {
        let mut words = [0i64; 7];
        for w in &mut words {
            *w = self.i64()?;
        }
        Some(Stamp::from_words(words))
    }

    fn flag(&mut self) -> Option<bool> {
        match self.take(1)?[0] {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    fn entry(&mut self) -> Option<(Seen, Task)> {
        let (row, fields) = self.row_fields()?;
        fields.check()?;
        Some((row.seen(), row.task_of(fields)))
    }
}

fn status_of(byte: u8) -> Option<Status> {
    match byte {
        0 => Some(Status::Pending),
        1 => Some(Status::InProgress),
        2 => Some(Status::Completed),
        _ => None,
    }
}

/// `n` in decimal, without the formatting machinery (once per task).
fn decimal(n: u64) -> String {
    digits(n, &mut [0; 20]).to_owned()
}

/// `n` in decimal, written at the end of `buf`.
pub(crate) fn digits(mut n: u64, buf: &mut [u8; 20]) -> &str {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[at..]).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp_of(path: &std::path::Path) -> Stamp {
        Stamp::of(&std::fs::metadata(path).unwrap())
    }

    #[test]
    fn an_index_reads_back_as_written_and_garbage_reads_as_none() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("1.json");
        std::fs::write(&f, "x").unwrap();
        let mut a = Task::new("1", "first ☃");
        a.owner = Some("bob".into());
        a.status = Status::InProgress;
        a.blocked_by = vec!["2".into()];
        a.metadata = Some(serde_json::from_str(r#"{"k":[1,{"z":null}],"a":"b"}"#).unwrap());
        a.extra.insert("later".into(), Value::Bool(true));
        let mut b = Task::new("2", "");
        b.active_form = Some("doing".into());
        b.blocks = vec!["1".into()];
        let dir = Stamp::of(&std::fs::metadata(d.path()).unwrap());
        let entries = [(stamp_of(&f), true, &a), (stamp_of(&f), false, &b)];
        let bytes = Index::encode(dir, true, 42, (77, 5), entries.iter().copied());
        let ix = Index::decode(&bytes).unwrap();
        assert_eq!(
            (ix.dir, ix.dir_settled, ix.began_ns, ix.at),
            (dir, true, 42, (77, 5))
        );
        assert_eq!(Index::at_in(&bytes), Some((77, 5)));
        let back: Vec<_> = ix
            .seen
            .iter()
            .zip(&ix.tasks)
            .map(|(s, t)| (s.stamp, s.settled, t))
            .collect();
        assert_eq!(back, entries);
        let open_of = |bytes: &[u8]| {
            let on_disk = d.path().join("index");
            std::fs::write(&on_disk, bytes).unwrap();
            Index::open_in(&File::open(&on_disk).unwrap())
        };
        let (began, open) = open_of(&bytes).unwrap();
        assert_eq!(began, 42);
        let open: Vec<_> = open
            .iter()
            .map(|o| (o.id, o.seen.is_some(), o.claimable, o.blockers.clone()))
            .collect();
        // a: in progress (its blockers do not matter: it is taken); b:
        // claimable.
        assert_eq!(open, [(1, true, false, vec![]), (2, false, true, vec![])]);
        // A pending, ownerless task waiting for an open one keeps its
        // blockers.
        a.owner = None;
        a.status = Status::Pending;
        let entries = [(stamp_of(&f), true, &a), (stamp_of(&f), false, &b)];
        let bytes2 = Index::encode(dir, true, 42, (0, 0), entries.iter().copied());
        let (_, open2) = open_of(&bytes2).unwrap();
        assert_eq!(
            (open2[0].claimable, open2[0].blockers.clone()),
            (false, vec![2])
        );
        // Every cut of it, and a byte changed in its header, trailer or
        // lengths, is refused rather than misread.
        // Read in place, the rows are the decoded tasks.
        let rows = Rows::of(&bytes).unwrap();
        let in_place: Vec<_> = rows.iter(&bytes).map(|r| (r.seen(), r.task())).collect();
        let decoded: Vec<_> = ix.seen.iter().copied().zip(ix.tasks.clone()).collect();
        assert_eq!(in_place, decoded);
        for n in 0..bytes.len() {
            assert_eq!(Index::decode(&bytes[..n]), None, "cut at {n}");
            assert_eq!(Rows::of(&bytes[..n]), None, "cut at {n}");
            assert_eq!(open_of(&bytes[..n]), None, "cut at {n}");
        }
        // More open tasks than the first read holds: read further.
        let many: Vec<Task> = (1..=3000).map(|i| Task::new(i.to_string(), "x")).collect();
        let bytes3 = Index::encode(
            dir,
            true,
            7,
            (0, 0),
            many.iter().map(|t| (stamp_of(&f), true, t)),
        );
        assert!(bytes3.len() > 3 * 64 * 1024);
        let (_, open3) = open_of(&bytes3).unwrap();
        assert_eq!(
            open3.iter().map(|o| o.id).collect::<Vec<_>>(),
            (1..=3000).collect::<Vec<_>>()
        );
        // (The data bytes themselves are not checked: a crash tears, it does
        // not flip bits.)
        // Magic, the count of open tasks (after the 89-byte head), the length
        // and the trailer.
        for at in [0, 89, bytes.len() - 12, bytes.len() - 1] {
            let mut bad = bytes.clone();
            bad[at] ^= 0xff;
            assert_eq!(Index::decode(&bad), None, "byte {at} changed");
            assert_eq!(Rows::of(&bad), None, "byte {at} changed");
        }
        assert_eq!(Index::decode(b""), None);
        // Text that is not UTF-8 and an object that is not JSON, inside
        // an entry whose frame holds: refused too, read in place or not.
        let at = |needle: &[u8]| {
            bytes
                .windows(needle.len())
                .position(|w| w == needle)
                .unwrap()
        };
        for (needle, bad_byte) in [(&b"first"[..], 0xff), (&b"{\"k\""[..], b'!')] {
            let mut bad = bytes.clone();
            bad[at(needle)] = bad_byte;
            assert_eq!(Index::decode(&bad), None);
            assert_eq!(Rows::of(&bad), None);
        }
    }

    #[test]
    fn decimal_is_to_string() {
        for n in [0, 7, 10, 99, 100, 4_294_967_296, u64::MAX] {
            assert_eq!(decimal(n), n.to_string());
        }
    }

    #[test]
    fn a_stamp_is_settled_only_a_granule_after_its_change() {
        let s = 1_000_000_000i64;
        // Nanosecond times: 50 ms.
        assert!(!settled((5, 1), 5 * s + 1));
        assert!(!settled((5, 1), 5 * s + 49_000_000));
        assert!(settled((5, 1), 5 * s + 50_000_001));
        // Whole seconds: two of them.
        assert!(!settled((5, 0), 6 * s));
        assert!(settled((5, 0), 7 * s));
        // A clock that went back: never settled.
        assert!(!settled((5, 1), 4 * s));
    }

    #[test]
    fn a_whole_index_needs_the_same_settled_directory_and_a_young_index() {
        let d = tempfile::tempdir().unwrap();
        let dir = Stamp::of(&std::fs::metadata(d.path()).unwrap());
        let ix = |settled| Index::encode(dir, settled, 100, (0, 0), std::iter::empty());
        assert!(Index::whole_in(&ix(true), dir, 100));
        assert!(!Index::whole_in(&ix(false), dir, 100), "not settled");
        let late = 100 + WHOLE_FOR.as_nanos() as i64 + 1;
        assert!(!Index::whole_in(&ix(true), dir, late), "too old");
        assert!(!Index::whole_in(&ix(true), dir, 99), "clock went back");
        let mut words = dir.words();
        words[6] += 1;
        let moved = Stamp::from_words(words);
        assert!(!Index::whole_in(&ix(true), moved, 100), "directory changed");
        assert!(!Index::whole_in(&ix(true)[1..], dir, 100), "no magic");
        assert!(!Index::whole_in(b"SWBIDX02", dir, 100), "no head");
    }
}
