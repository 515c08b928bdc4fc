//! The bytes of an inbox (and history) file, and the compaction policy.
//!
//! A file is `JSON.stringify(array, null, 2)`, no trailing newline; empty is
//! exactly `[]`. Each entry is held as [`Stored`]: the validated [`Entry`]
//! plus the exact text it occupies in the file at depth 1. An entry read
//! from disk keeps its original bytes (key order, unknown keys, escapes and
//! all) whenever they are already laid out as pretty JSON at that depth, so
//! rewriting an inbox never alters what others wrote; only new entries, and
//! entries someone wrote in another layout, are serialized by swarm.

use super::entry::{Entry, InvalidEntry};
use super::view;
use serde_json::Value;
use serde_json::value::RawValue;
use std::cell::OnceCell;

/// An entry and its text in the file (indented for depth 1).
///
/// The [`Entry`] itself is built on first use: a send only needs each
/// existing entry's `msg_id`, `read` flag and size (kept in [`Meta`]), so it
/// validates the file in one borrowed pass ([`view`]) and never builds the
/// thousands of entries it only copies through. Building one later parses
/// `text`, which is the entry's original bytes, so it yields exactly what an
/// eager parse would have.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub text: Box<str>,
    meta: Meta,
    /// Boxed: most entries of a send are never built, and an empty cell
    /// should cost a pointer, not an `Entry`.
    entry: OnceCell<Box<Entry>>,
}

/// What compaction and de-duplication need to know of an entry without
/// building it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Meta {
    msg_id: Option<Box<str>>,
    read: Option<bool>,
    /// `text` starts with `{` (after whitespace): it may be a protocol frame.
    brace: bool,
}

impl Meta {
    fn of(entry: &Entry) -> Meta {
        Meta {
            msg_id: entry.msg_id.as_deref().map(Into::into),
            read: entry.read,
            brace: view::may_be_frame(&entry.text),
        }
    }
}

impl Stored {
    /// A new entry, serialized by swarm.
    pub fn new(entry: Entry) -> Stored {
        let text = indent(&crate::json_text::to_pretty(&entry));
        Stored::built(entry, text)
    }

    fn built(entry: Entry, text: Box<str>) -> Stored {
        Stored {
            meta: Meta::of(&entry),
            text,
            entry: OnceCell::from(Box::new(entry)),
        }
    }

    /// The entry, built from its text on first use.
    pub fn entry(&self) -> &Entry {
        self.entry.get_or_init(|| Box::new(build(&self.text)))
    }

    /// The entry, by value.
    pub fn into_entry(self) -> Entry {
        match self.entry.into_inner() {
            Some(e) => *e,
            None => build(&self.text),
        }
    }

    /// The `msg_id`, without building the entry.
    pub fn msg_id(&self) -> Option<&str> {
        self.meta.msg_id.as_deref()
    }

    /// Not yet consumed (`read` absent or `false`), without building the entry.
    pub fn is_unread(&self) -> bool {
        self.meta.read != Some(true)
    }

    /// Bytes this entry adds to a file: two of indent, two of separator.
    fn cost(&self) -> usize {
        self.text.len() + 4
    }
}

/// Builds the entry of a text that [`view::check`] accepted. That check
/// accepts only what [`Entry::from_value`] accepts (see [`view`]), so this
/// cannot fail; a failure would be a bug in that module, not bad input.
fn build(text: &str) -> Entry {
    crate::json_text::parse_lenient::<Value>(text.as_bytes())
        .map_err(|e| InvalidEntry(e.to_string()))
        .and_then(Entry::from_value)
        .unwrap_or_else(|e| panic!("an entry validated on reading no longer reads: {e}"))
}

/// What a file's bytes hold.
#[derive(Debug)]
pub(crate) enum Parsed {
    Clean(Vec<Stored>),
    /// Not an array, not JSON, or holding invalid entries: `salvaged` are the
    /// valid entries (none when the top level did not parse as an array).
    Corrupt {
        salvaged: Vec<Stored>,
        problem: String,
    },
}

/// Reads a file's bytes (a UTF-8 BOM and lone surrogate escapes tolerated),
/// building every entry.
pub(crate) fn parse(bytes: &[u8]) -> Parsed {
    parse_with(bytes, false)
}

/// [`parse`], but entries laid out as swarm and Claude Code write them are
/// only validated, and built on first use ([`Stored::entry`]). Same result,
/// same verdict on every entry.
pub(crate) fn parse_lazy(bytes: &[u8]) -> Parsed {
    parse_with(bytes, true)
}

fn parse_with(bytes: &[u8], lazy: bool) -> Parsed {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let items: Vec<Item<'_>> = match serde_json::from_slice::<Vec<&RawValue>>(bytes) {
        Ok(raws) => raws.into_iter().map(Item::Raw).collect(),
        Err(raw_err) => match crate::json_text::parse_lenient::<Value>(bytes) {
            Ok(Value::Array(values)) => values.into_iter().map(Item::Value).collect(),
            Ok(other) => {
                let problem = format!(
                    "top level is {}, not an array",
                    crate::json_text::kind(&other)
                );
                return Parsed::Corrupt {
                    salvaged: Vec::new(),
                    problem,
                };
            }
            Err(_) => {
                let problem = format!("not valid JSON ({raw_err})");
                return Parsed::Corrupt {
                    salvaged: Vec::new(),
                    problem,
                };
            }
        },
    };
    // One spare slot: a send pushes its entry next.
    let mut stored = Vec::with_capacity(items.len() + 1);
    let mut invalid = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        match item.into_stored(lazy) {
            Ok(s) => stored.push(s),
            Err(e) => invalid.push(format!("entry {i}: {e}")),
        }
    }
    if invalid.is_empty() {
        return Parsed::Clean(stored);
    }
    let shown: Vec<_> = invalid.iter().take(3).cloned().collect();
    let more = invalid.len().saturating_sub(3);
    let mut problem = format!("{} invalid entries ({})", invalid.len(), shown.join("; "));
    if more > 0 {
        problem.push_str(&format!(" and {more} more"));
    }
    Parsed::Corrupt {
        salvaged: stored,
        problem,
    }
}

enum Item<'a> {
    Raw(&'a RawValue),
    Value(Value),
}

impl Item<'_> {
    fn into_stored(self, lazy: bool) -> Result<Stored, InvalidEntry> {
        match self {
            Item::Raw(raw) => {
                // Fast path: an entry already in file layout that the borrowed
                // check accepts is kept as text. Anything else (another
                // layout, or anything the check refuses, including what only
                // the lenient reader accepts) takes the full path, which
                // decides.
                if lazy
                    && pretty_shaped(raw.get())
                    && let Some(v) = view::check(raw.get())
                {
                    return Ok(Stored {
                        text: raw.get().into(),
                        meta: Meta {
                            msg_id: v.msg_id,
                            read: v.read,
                            brace: v.brace,
                        },
                        entry: OnceCell::new(),
                    });
                }
                let value: Value = crate::json_text::parse_lenient(raw.get().as_bytes())
                    .map_err(|e| InvalidEntry(format!("unreadable ({e})")))?;
                let text: Box<str> = if pretty_shaped(raw.get()) {
                    raw.get().into()
                } else {
                    canonical(&value)
                };
                Ok(Stored::built(Entry::from_value(value)?, text))
            }
            Item::Value(value) => {
                let text = canonical(&value);
                Ok(Stored::built(Entry::from_value(value)?, text))
            }
        }
    }
}

/// What [`stream_file`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Streamed {
    /// No file.
    Missing,
    /// A JSON array, each of whose elements the callback accepted.
    Clean,
    /// Anything else (not JSON, not an array, an element refused): the
    /// caller falls back to [`parse`], which salvages and says why.
    Unsure,
}

/// Files up to this size are read whole by [`stream_file`]: twice the
/// inbox's byte cap.
pub(crate) const WHOLE_UP_TO: u64 = 2 * super::MAX_FILE_BYTES as u64;

/// Reads the file at `path` one element at a time, handing each element's
/// text to `each` (which returns whether the element is a valid entry).
/// A file within [`WHOLE_UP_TO`] is read whole first; a larger one (only a
/// writer other than swarm makes one) is never held whole: memory is one
/// element and a read buffer, plus what `each` keeps. A UTF-8 BOM is skipped. The file
/// is opened without following a link (see `atomic_file::open_optional`).
pub(crate) fn stream_file(
    path: &std::path::Path,
    mut each: impl FnMut(&RawValue) -> std::io::Result<bool>,
) -> std::io::Result<Streamed> {
    use std::io::{BufRead, Read};
    let Some(mut file) = crate::atomic_file::open_optional(path)? else {
        return Ok(Streamed::Missing);
    };
    let mut visitor = EachElement {
        each: &mut each,
        failed: None,
        refused: false,
    };
    // A file of the usual size is read whole and parsed from memory: a
    // reader-fed parser takes each byte through a call of its own (four
    // times the time of the whole read and parse at 10,000 entries).
    let len = file.metadata()?.len();
    let parsed = if len <= WHOLE_UP_TO {
        let mut bytes = Vec::with_capacity(len as usize + 1);
        file.read_to_end(&mut bytes)?;
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
        let mut de = serde_json::Deserializer::from_slice(bytes);
        serde::Deserializer::deserialize_seq(&mut de, &mut visitor).and_then(|()| de.end())
    } else {
        let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
        if reader.fill_buf()?.starts_with(b"\xEF\xBB\xBF") {
            reader.consume(3);
        }
        let mut de = serde_json::Deserializer::from_reader(reader);
        serde::Deserializer::deserialize_seq(&mut de, &mut visitor).and_then(|()| de.end())
    };
    if let Some(e) = visitor.failed {
        return Err(e);
    }
    match parsed {
        Ok(()) if !visitor.refused => Ok(Streamed::Clean),
        Ok(()) => Ok(Streamed::Unsure),
        Err(e) if e.is_io() => Err(e.into()),
        Err(_) => Ok(Streamed::Unsure),
    }
}

/// The visitor of [`stream_file`]: calls `each` per element, and stops at
/// the first it refuses or that fails.
struct EachElement<'f, F> {
    each: &'f mut F,
    failed: Option<std::io::Error>,
    refused: bool,
}

impl<'de, F: FnMut(&RawValue) -> std::io::Result<bool>> serde::de::Visitor<'de>
    for &mut EachElement<'_, F>
{
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of entries")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(raw) = seq.next_element::<Box<RawValue>>()? {
            match (self.each)(&raw) {
                Ok(true) => {}
                Ok(false) => {
                    self.refused = true;
                    return Err(serde::de::Error::custom("invalid entry"));
                }
                Err(e) => {
                    self.failed = Some(e);
                    return Err(serde::de::Error::custom("stopped"));
                }
            }
        }
        Ok(())
    }
}

/// The entry of one element, validated as [`parse`] validates it, without
/// keeping its text (for a reader that only wants entries).
pub(crate) fn entry_of(raw: &RawValue) -> Result<Entry, InvalidEntry> {
    if let Some(e) = Entry::from_plain_json(raw.get()) {
        return Ok(e);
    }
    let value: Value = crate::json_text::parse_lenient(raw.get().as_bytes())
        .map_err(|e| InvalidEntry(format!("unreadable ({e})")))?;
    Entry::from_value(value)
}

/// One element as [`parse_lazy`] holds it.
pub(crate) fn stored_of(raw: &RawValue) -> Result<Stored, InvalidEntry> {
    Item::Raw(raw).into_stored(true)
}

/// Renders a file one entry at a time (the bytes [`render`] gives).
pub(crate) struct Renderer<W: std::io::Write> {
    out: W,
    entries: usize,
}

impl<W: std::io::Write> Renderer<W> {
    pub(crate) fn new(out: W) -> Self {
        Renderer { out, entries: 0 }
    }

    pub(crate) fn push(&mut self, s: &Stored) -> std::io::Result<()> {
        self.out.write_all(if self.entries == 0 {
            b"[\n  "
        } else {
            b",\n  "
        })?;
        self.entries += 1;
        self.out.write_all(s.text.as_bytes())
    }

    /// Closes the array and returns the writer.
    pub(crate) fn finish(mut self) -> std::io::Result<W> {
        self.out
            .write_all(if self.entries == 0 { b"[]" } else { b"\n]" })?;
        Ok(self.out)
    }
}

/// An existing entry re-laid-out as pretty JSON, its key order kept.
fn canonical(value: &Value) -> Box<str> {
    indent(&crate::json_text::to_pretty(value))
}

/// Pretty JSON of a top-level value, indented to sit at depth 1 of an array.
/// JSON strings never hold a raw newline, so every newline is layout.
fn indent(pretty: &[u8]) -> Box<str> {
    let s = String::from_utf8_lossy(pretty);
    s.replace('\n', "\n  ").into_boxed_str()
}

/// Whether an entry's original text is already laid out the way
/// `JSON.stringify(array, null, 2)` puts an object at depth 1: `{}` or
/// `{` + lines indented by at least four spaces + `  }`.
fn pretty_shaped(raw: &str) -> bool {
    if raw == "{}" {
        return true;
    }
    let Some(inner) = raw
        .strip_prefix("{\n")
        .and_then(|r| r.strip_suffix("\n  }"))
    else {
        return false;
    };
    inner.split('\n').all(|line| line.starts_with("    "))
}

/// What appending `fresh` to a non-empty file laid out by [`render`] writes,
/// from where its closing `\n]` starts: `,\n  ` and each entry, then a new
/// `\n]`. The file is then byte for byte [`render`] of all its entries.
pub(crate) fn appended(fresh: &[Stored]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(rendered_len(fresh) + 2);
    for s in fresh {
        bytes.extend_from_slice(b",\n  ");
        bytes.extend_from_slice(s.text.as_bytes());
    }
    bytes.extend_from_slice(b"\n]");
    bytes
}

/// Writes `bytes` ([`appended`]) over the closing `\n]` of the file `f`,
/// which holds `len` bytes laid out by [`render`], in one `pwrite`, then
/// `fdatasync`. The one routine that appends in place, for inboxes and
/// histories alike; the caller holds the file's inbox lock.
pub(crate) fn append_at(f: &std::fs::File, len: u64, bytes: &[u8]) -> std::io::Result<()> {
    write_at(f, len, bytes)?;
    f.sync_data()
}

/// [`append_at`] without the `fdatasync`, which the caller owes: the
/// bytes are in the page cache, where readers see them.
pub(crate) fn write_at(f: &std::fs::File, len: u64, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    if f.metadata()?.len() != len || len < 2 {
        return Err(std::io::Error::other(
            "the file changed under its inbox lock",
        ));
    }
    f.write_all_at(bytes, len - 2)
}

/// The entries of a file whose last append was torn by a crash: every
/// whole entry before the tear, or `None` when the file is not that. An
/// entry as rendered ends with a line holding only its closing brace at
/// the array's indent, and JSON strings hold no raw newline, so `\n  }`
/// is only ever that; the file is cut after such a line and closed, the
/// latest first, until it parses.
pub(crate) fn torn_repaired(bytes: &[u8]) -> Option<Vec<Stored>> {
    const END: &[u8] = b"\n  }";
    let mut end = bytes.len();
    for _ in 0..64 {
        let at = bytes[..end].windows(END.len()).rposition(|w| w == END)?;
        let mut cut = bytes[..at + END.len()].to_vec();
        cut.extend_from_slice(b"\n]");
        if let Parsed::Clean(v) = parse(&cut) {
            return Some(v);
        }
        end = at;
    }
    None
}

/// The file's bytes.
pub(crate) fn render(entries: &[Stored]) -> Vec<u8> {
    if entries.is_empty() {
        return b"[]".to_vec();
    }
    let mut out = Vec::with_capacity(rendered_len(entries));
    out.extend_from_slice(b"[\n  ");
    for (i, s) in entries.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b",\n  ");
        }
        out.extend_from_slice(s.text.as_bytes());
    }
    out.extend_from_slice(b"\n]");
    out
}

/// `render(entries).len()`, without rendering.
pub(crate) fn rendered_len(entries: &[Stored]) -> usize {
    2 + entries.iter().map(Stored::cost).sum::<usize>()
}

/// The caps an inbox is held to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_file_bytes: usize,
    pub target_bytes: usize,
    pub max_plain: usize,
    pub max_read: usize,
    pub max_unread_protocol: usize,
}

impl Limits {
    pub const INBOX: Limits = Limits {
        max_file_bytes: super::MAX_FILE_BYTES,
        target_bytes: super::COMPACT_TARGET_BYTES,
        max_plain: super::MAX_PLAIN,
        max_read: super::MAX_READ,
        max_unread_protocol: super::MAX_UNREAD_PROTOCOL,
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Read,
    UnreadProtocol,
    UnreadPlain,
}

fn classify(s: &Stored) -> (Class, bool) {
    let protocol = s.meta.brace && s.entry().protocol().is_some();
    let class = match (s.is_unread(), protocol) {
        (false, _) => Class::Read,
        (true, true) => Class::UnreadProtocol,
        (true, false) => Class::UnreadPlain,
    };
    (class, protocol)
}

/// What the caps look at in a file, counted without classifying any entry
/// (which means parsing every possible frame): upper bounds of what each
/// cap counts. Kept with the inbox as swarm last wrote it (`last_write`),
/// so a send can tell it needs no compaction without reading the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counts {
    pub entries: u64,
    pub read: u64,
    /// Unread entries whose text may be a protocol frame.
    pub maybe_unread_frames: u64,
    /// [`rendered_len`] of the entries.
    pub bytes: u64,
}

impl Counts {
    pub(crate) fn of(entries: &[Stored]) -> Counts {
        let mut c = Counts {
            bytes: 2,
            ..Counts::default()
        };
        for s in entries {
            c.add(s);
        }
        c
    }

    /// The counts once `s` is added.
    pub(crate) fn add(&mut self, s: &Stored) {
        self.entries += 1;
        self.read += u64::from(!s.is_unread());
        self.maybe_unread_frames += u64::from(s.is_unread() && s.meta.brace);
        self.bytes += s.cost() as u64;
    }

    /// Whether [`compact`] would certainly drop nothing from a file with
    /// these counts.
    pub(crate) fn surely_under(&self, limits: Limits) -> bool {
        // Plain cap: only read plain entries are dropped for it; the plain
        // count is at most the number of entries.
        (self.entries <= limits.max_plain as u64 || self.read == 0)
            && self.read <= limits.max_read as u64
            && self.maybe_unread_frames <= limits.max_unread_protocol as u64
            && self.bytes <= limits.max_file_bytes as u64
    }
}

/// Whether [`compact`] would certainly drop nothing (see [`Counts`]).
fn surely_under_caps(entries: &[Stored], limits: Limits) -> bool {
    Counts::of(entries).surely_under(limits)
}

/// Applies the caps to `entries`, whose last element is the entry being
/// sent (never dropped). Returns the dropped entries, oldest first, or why
/// the inbox is full: an unread plain message is never dropped, so when only
/// dropping one would satisfy a cap, nothing may be written.
///
/// * plain messages (read or unread) ≤ `max_plain`: oldest read plain ones go
///   (unread plain ones stay, however many);
/// * read entries ≤ `max_read`: oldest go;
/// * unread protocol frames ≤ `max_unread_protocol`: oldest go;
/// * over `max_file_bytes`: oldest read, then oldest unread protocol entries
///   go until the file is ≤ `target_bytes`; still over `max_file_bytes` →
///   full.
pub(crate) fn compact(entries: &mut Vec<Stored>, limits: Limits) -> Result<Vec<Stored>, String> {
    if surely_under_caps(entries, limits) {
        return Ok(Vec::new());
    }
    let n = entries.len();
    let classes: Vec<(Class, bool)> = entries.iter().map(classify).collect();
    let mut drop = vec![false; n];
    let droppable = |i: usize| i + 1 < n;
    let count = |drop: &[bool], f: &dyn Fn((Class, bool)) -> bool| {
        (0..n).filter(|&i| !drop[i] && f(classes[i])).count()
    };
    // Drops the oldest entries matching `f` until `excess` are gone.
    let drop_oldest =
        |drop: &mut Vec<bool>, mut excess: usize, f: &dyn Fn((Class, bool)) -> bool| {
            for i in 0..n {
                if excess == 0 {
                    break;
                }
                if !drop[i] && droppable(i) && f(classes[i]) {
                    drop[i] = true;
                    excess -= 1;
                }
            }
        };

    // Read plain messages beyond the plain cap go, oldest first. Unread
    // plain messages are never dropped and never refused for their count:
    // only the byte cap below can make an inbox full.
    let is_plain = |c: (Class, bool)| !c.1;
    let plain = count(&drop, &is_plain);
    if plain > limits.max_plain {
        drop_oldest(&mut drop, plain - limits.max_plain, &|c| {
            is_plain(c) && c.0 == Class::Read
        });
    }
    let read = count(&drop, &|c| c.0 == Class::Read);
    if read > limits.max_read {
        drop_oldest(&mut drop, read - limits.max_read, &|c| c.0 == Class::Read);
    }
    let unread_protocol = count(&drop, &|c| c.0 == Class::UnreadProtocol);
    if unread_protocol > limits.max_unread_protocol {
        let excess = unread_protocol - limits.max_unread_protocol;
        drop_oldest(&mut drop, excess, &|c| c.0 == Class::UnreadProtocol);
    }

    let mut size = 2
        + (0..n)
            .filter(|&i| !drop[i])
            .map(|i| entries[i].cost())
            .sum::<usize>();
    if size > limits.max_file_bytes {
        for class in [Class::Read, Class::UnreadProtocol] {
            for i in 0..n {
                if size <= limits.target_bytes {
                    break;
                }
                if !drop[i] && droppable(i) && classes[i].0 == class {
                    drop[i] = true;
                    size -= entries[i].cost();
                }
            }
        }
        if size > limits.max_file_bytes {
            let unread = count(&drop, &|c| c.0 == Class::UnreadPlain);
            return Err(format!(
                "it would be {size} bytes (limit {}) with {unread} unread plain messages, \
                 which are never dropped",
                limits.max_file_bytes
            ));
        }
    }

    let mut dropped = Vec::new();
    let mut kept = Vec::with_capacity(n);
    for (s, d) in entries.drain(..).zip(drop) {
        if d { dropped.push(s) } else { kept.push(s) }
    }
    *entries = kept;
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(text: &str, read: bool) -> Stored {
        let mut e = Entry::new("bob", text.to_owned(), None, None);
        e.read = Some(read);
        Stored::new(e)
    }

    fn frame() -> String {
        r#"{"type":"idle_notification","from":"bob","timestamp":"t"}"#.to_owned()
    }

    fn texts(v: &[Stored]) -> Vec<String> {
        v.iter().map(|s| s.entry().text.clone()).collect()
    }

    const SMALL: Limits = Limits {
        max_file_bytes: 1_000_000,
        target_bytes: 500_000,
        max_plain: 5,
        max_read: 2,
        max_unread_protocol: 3,
    };

    #[test]
    fn empty_is_two_bytes_and_entries_are_pretty_without_trailing_newline() {
        assert_eq!(render(&[]), b"[]");
        let v = vec![stored("a", false), stored("b", false)];
        let bytes = render(&v);
        assert_eq!(bytes.len(), rendered_len(&v));
        let text = String::from_utf8(bytes.clone()).unwrap();
        let values: Vec<Value> = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            text,
            String::from_utf8(crate::json_text::to_pretty(&values)).unwrap()
        );
        assert!(
            text.starts_with("[\n  {\n    \"from\": \"bob\",\n    \"text\": \"a\",")
                && text.ends_with("\n  }\n]")
        );
    }

    #[test]
    fn foreign_entries_keep_their_bytes_and_compact_ones_are_laid_out() {
        let file = "[\n  {\n    \"text\": \"x\\u00e9\\ud800\",\n    \"timestamp\": \"t\",\n    \"from\": \"a\",\n    \"nested\": {\n      \"k\": [\n        1.50\n      ]\n    }\n  },\n  {\"from\":\"b\",\"text\":\"y\",\"timestamp\":\"t\"}\n]";
        let Parsed::Clean(v) = parse(file.as_bytes()) else {
            panic!("not clean")
        };
        assert_eq!(v[0].entry().text, "x\u{e9}\u{fffd}");
        let out = String::from_utf8(render(&v)).unwrap();
        let first_end = file.find("\n  },").unwrap() + 4;
        assert_eq!(
            &out[..first_end],
            &file[..first_end],
            "first entry byte for byte"
        );
        assert!(out.ends_with(",\n  {\n    \"from\": \"b\",\n    \"text\": \"y\",\n    \"timestamp\": \"t\"\n  }\n]"), "{out}");
    }

    #[test]
    fn corrupt_files_are_reported_with_whatever_could_be_salvaged() {
        for (bytes, salvaged) in [
            (&b"[{\"from\":"[..], 0),
            (b"", 0),
            (b"{}", 0),
            (b"null", 0),
            (
                b"[{\"from\":\"a\",\"text\":\"b\",\"timestamp\":\"c\"}, 5, {\"from\":1}]",
                1,
            ),
        ] {
            match parse(bytes) {
                Parsed::Corrupt {
                    salvaged: s,
                    problem,
                } => {
                    assert_eq!(s.len(), salvaged, "{problem}");
                    assert!(!problem.is_empty());
                }
                Parsed::Clean(_) => panic!("{:?} read as clean", String::from_utf8_lossy(bytes)),
            }
        }
    }

    #[test]
    fn compaction_is_a_no_op_under_the_caps() {
        let mut v = vec![
            stored("a", false),
            stored(&frame(), false),
            stored("b", true),
        ];
        assert!(compact(&mut v, SMALL).unwrap().is_empty());
        assert_eq!(v.len(), 3);
    }

    #[test]
    fn oldest_read_and_oldest_unread_protocol_go_first_and_unread_plain_stays() {
        let mut v = vec![
            stored("r1", true),
            stored(&frame(), false),
            stored("r2", true),
            stored("u1", false),
            stored(&frame(), false),
            stored("r3", true),
            stored(&frame(), false),
            stored(&frame(), false),
        ];
        let dropped = compact(&mut v, SMALL).unwrap();
        assert_eq!(texts(&dropped), vec!["r1".to_owned(), frame()]);
        assert_eq!(
            texts(&v),
            vec![
                "r2".to_owned(),
                "u1".into(),
                frame(),
                "r3".into(),
                frame(),
                frame()
            ]
        );
    }

    #[test]
    fn unread_plain_messages_over_the_plain_cap_stay() {
        let mut v: Vec<_> = (0..6).map(|i| stored(&format!("u{i}"), false)).collect();
        assert!(
            compact(&mut v, SMALL).unwrap().is_empty(),
            "no unread message dropped"
        );
        assert_eq!(v.len(), 6);
        let mut v: Vec<_> = (0..6).map(|i| stored(&format!("m{i}"), i == 0)).collect();
        assert_eq!(
            texts(&compact(&mut v, SMALL).unwrap()),
            ["m0"],
            "a read plain one makes room"
        );
    }

    #[test]
    fn size_compaction_drops_down_to_the_target_and_never_the_new_entry() {
        let big = |t: &str, read| stored(&format!("{t}{}", "x".repeat(300)), read);
        let c = big("r", true).cost();
        let limits = Limits {
            max_file_bytes: 4 * c,
            target_bytes: 5 * c / 2,
            ..Limits::INBOX
        };
        let mut v = vec![
            big("r", true),
            big("u", false),
            big("r", true),
            big("r", true),
            big("n", true),
        ];
        let dropped = compact(&mut v, limits).unwrap();
        assert_eq!(dropped.len(), 3);
        assert!(rendered_len(&v) <= limits.target_bytes);
        assert!(v[1].entry().text.starts_with('n'), "the new entry stays");
        let mut v: Vec<_> = (0..6).map(|_| big("u", false)).collect();
        let err = compact(&mut v, limits).unwrap_err();
        assert!(err.contains(&format!("limit {}", 4 * c)), "{err}");
        assert_eq!(v.len(), 6, "nothing dropped when full");
    }
}
