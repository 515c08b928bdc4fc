//! Reading only what was appended: [`Tail`] remembers the bytes of an inbox
//! as a reader last read them, and tells from the file's new bytes whether
//! entries were only added at the end (the way every send writes: the same
//! bytes up to the last entry, then `,` and the new ones). Then only the
//! added part is parsed; anything else (a consumption, a rewrite by Claude
//! Code with another layout, a corrupt file) makes the caller read the whole
//! file as before. Comparing the old bytes costs a `memcmp`, far less than
//! parsing 10,000 entries on every wake-up.

use super::entry::Entry;
use super::inbox;
use serde_json::value::RawValue;

/// What a reader last read of one inbox file.
#[derive(Debug, Default)]
pub struct Tail {
    /// The file's bytes, up to and including its last entry's closing `}`;
    /// empty when nothing is remembered.
    prefix: Vec<u8>,
}

/// How a file's new bytes relate to the remembered ones.
#[derive(Debug)]
pub(crate) enum Change {
    /// Byte for byte the same entries.
    Same,
    /// The remembered entries, then these, appended.
    Appended(Vec<Entry>),
    /// Anything else: read the whole file.
    Unknown,
}

impl Tail {
    /// Forgets what was read: the next comparison is [`Change::Unknown`].
    pub(crate) fn forget(&mut self) {
        self.prefix.clear();
    }

    /// Remembers `bytes`, a file that parsed cleanly with at least one entry
    /// (an empty inbox is cheap to read whole).
    pub(crate) fn remember(&mut self, bytes: &[u8]) {
        self.prefix.clear();
        if let Some(p) = entries_prefix(bytes) {
            self.prefix.extend_from_slice(p);
        }
    }

    /// How `now`, the file's current bytes, differs from what was remembered.
    pub(crate) fn compare(&self, now: &[u8]) -> Change {
        if self.prefix.is_empty() || !now.starts_with(&self.prefix) {
            return Change::Unknown;
        }
        let rest = trim_start(&now[self.prefix.len()..]);
        if rest.starts_with(b"]") && trim_start(&rest[1..]).is_empty() {
            return Change::Same;
        }
        let Some(added) = rest.strip_prefix(b",") else {
            return Change::Unknown;
        };
        let mut array = Vec::with_capacity(added.len() + 1);
        array.push(b'[');
        array.extend_from_slice(added);
        let Ok(raws) = serde_json::from_slice::<Vec<&RawValue>>(&array) else {
            return Change::Unknown;
        };
        let mut entries = Vec::with_capacity(raws.len());
        for raw in raws {
            match inbox::entry_of(raw) {
                Ok(e) => entries.push(e),
                Err(_) => return Change::Unknown,
            }
        }
        Change::Appended(entries)
    }
}

/// `bytes` up to the end of its last entry: without the closing `]` and the
/// white space around it. `None` for an empty array or a file not ending in
/// `}` + `]`.
fn entries_prefix(bytes: &[u8]) -> Option<&[u8]> {
    let end = trim_end(bytes).strip_suffix(b"]")?;
    let p = trim_end(end);
    p.ends_with(b"}").then_some(p)
}

fn trim_start(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    &b[n..]
}

fn trim_end(b: &[u8]) -> &[u8] {
    let n = b
        .iter()
        .rev()
        .take_while(|c| c.is_ascii_whitespace())
        .count();
    &b[..b.len() - n]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(text: &str) -> String {
        format!(r#"{{"from":"a","text":"{text}","timestamp":"t","read":false}}"#)
    }

    fn texts(c: Change) -> Vec<String> {
        match c {
            Change::Appended(v) => v.into_iter().map(|e| e.text).collect(),
            other => panic!("not appended: {other:?}"),
        }
    }

    #[test]
    fn only_entries_appended_after_the_remembered_ones_are_parsed() {
        let one = format!("[\n  {}\n]", e("1"));
        let two = format!("[\n  {},\n  {}\n]\n", e("1"), e("2"));
        let three = format!("[\n  {},\n  {},\n  {}\n]", e("1"), e("2"), e("3"));
        let mut t = Tail::default();
        assert!(matches!(t.compare(one.as_bytes()), Change::Unknown));
        t.remember(one.as_bytes());
        assert!(matches!(t.compare(one.as_bytes()), Change::Same));
        assert_eq!(texts(t.compare(two.as_bytes())), ["2"]);
        assert_eq!(texts(t.compare(three.as_bytes())), ["2", "3"]);
        t.remember(three.as_bytes());
        assert!(matches!(t.compare(three.as_bytes()), Change::Same));
    }

    #[test]
    fn anything_but_an_append_reads_the_whole_file() {
        let two = format!("[{},{}]", e("1"), e("2"));
        let mut t = Tail::default();
        t.remember(two.as_bytes());
        for other in [
            format!("[{}]", e("1")),                           // consumed
            format!("[{},{}]", e("1"), e("X")),                // changed
            format!("[{},{},{{\"nope\":1}}]", e("1"), e("2")), // invalid entry
            format!("[{},{},", e("1"), e("2")),                // torn
            format!("[{},{}]]", e("1"), e("2")),               // not JSON
            "[]".to_string(),
        ] {
            assert!(
                matches!(t.compare(other.as_bytes()), Change::Unknown),
                "{other}"
            );
        }
        t.remember(b"[]");
        assert!(matches!(t.compare(b"[]"), Change::Unknown));
    }
}
