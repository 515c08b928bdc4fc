//! One inbox entry (reference §3.2): its fields, how a reader validates it,
//! the key order it is written in, and its identity.
//!
//! Written keys: `from, text, summary, timestamp, color, from_plugin, msgV,
//! msg_id, type, read, lead_sig`, then any unknown keys in the order they
//! were read; absent optionals are omitted. This is the order Claude Code
//! 2.1.328 writes for every kind of entry it produces.

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

/// One message in an inbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Sender name (`team-lead`, a teammate, `system`, `user`).
    pub from: String,
    /// Plain text, or a compact-JSON protocol frame.
    pub text: String,
    pub summary: Option<String>,
    /// `Date.toISOString()` of the send.
    pub timestamp: String,
    /// Sender's palette colour; the lead has none.
    pub color: Option<String>,
    pub from_plugin: Option<String>,
    /// `msgV`, always 1 when written by 2.1.328 or swarm.
    pub msg_v: Option<u64>,
    /// UUID v4, one per entry; missing in 2.1.88 files.
    pub msg_id: Option<String>,
    /// `type`: always `"message"`; a reader fills it in when missing.
    pub kind: Option<String>,
    /// `read`: written `false`; `true` only in files of Claude Code 2.1.88,
    /// where it means "already consumed".
    pub read: Option<bool>,
    /// Lead signature (reference §4), kept as read.
    pub lead_sig: Option<String>,
    /// Keys this version does not know, preserved on rewrite.
    pub extra: Map<String, Value>,
}

/// The identity of an entry: its `msg_id` when present, plus
/// `from|timestamp|text` (the triple Claude Code consumes by, reference §5.3).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EntryKey {
    pub msg_id: Option<String>,
    pub from: String,
    pub timestamp: String,
    pub text: String,
}

/// [`EntryKey`] borrowed from its entry ([`Entry::key_ref`]): the same
/// identity, compared and hashed without copying the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EntryKeyRef<'a> {
    pub msg_id: Option<&'a str>,
    pub from: &'a str,
    pub timestamp: &'a str,
    pub text: &'a str,
}

/// Why an entry read from a file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidEntry(pub String);

impl fmt::Display for InvalidEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Entry {
    /// A fresh entry as swarm sends it: timestamp now (ISO, ms), `msgV` 1, a
    /// new UUID v4 `msg_id`, `type:"message"`, `read:false`.
    pub fn new(from: &str, text: String, summary: Option<String>, color: Option<String>) -> Entry {
        Entry {
            from: from.to_owned(),
            text,
            summary,
            timestamp: crate::clock::now_iso(),
            color,
            from_plugin: None,
            msg_v: Some(1),
            msg_id: Some(uuid::Uuid::new_v4().to_string()),
            kind: Some("message".to_owned()),
            read: Some(false),
            lead_sig: None,
            extra: Map::new(),
        }
    }

    /// A fresh entry whose text is a protocol frame.
    pub fn frame(from: &str, message: &crate::protocol::Message, color: Option<String>) -> Entry {
        Entry::new(from, message.to_text(), None, color)
    }

    /// The identity consumption and de-duplication go by.
    pub fn key(&self) -> EntryKey {
        EntryKey {
            msg_id: self.msg_id.clone(),
            from: self.from.clone(),
            timestamp: self.timestamp.clone(),
            text: self.text.clone(),
        }
    }

    /// The message this entry carries, for showing it once: its key with
    /// the timestamp left out when it has a `msg_id`. A Claude Code
    /// teammate's start stamps swarm's signed mail afresh (same `msg_id`,
    /// a new timestamp, signed again: `agents::claude`); that is the same
    /// message, and a follower must not print it twice. A `msg_id` names
    /// one message in an inbox (another with the same id is refused).
    pub fn message_key(&self) -> EntryKey {
        let mut key = self.key();
        if key.msg_id.is_some() {
            key.timestamp.clear();
        }
        key
    }

    /// [`Entry::key`], borrowed.
    pub fn key_ref(&self) -> EntryKeyRef<'_> {
        EntryKeyRef {
            msg_id: self.msg_id.as_deref(),
            from: &self.from,
            timestamp: &self.timestamp,
            text: &self.text,
        }
    }

    /// Not yet consumed: `read` is absent or `false`.
    pub fn is_unread(&self) -> bool {
        self.read != Some(true)
    }

    /// The structured frame in `text`, if it holds a known one.
    pub fn protocol(&self) -> Option<crate::protocol::Message> {
        crate::protocol::Message::parse(&self.text)
    }

    /// Validates a value read from a file the way Claude Code does:
    /// `from`, `text`, `timestamp` strings; `type`, `color`, `summary`,
    /// `from_plugin` strings if present; `read` a boolean if present. A
    /// missing `type` reads as `"message"`. `msgV`, `msg_id` and `lead_sig`
    /// of an unexpected type are kept as unknown keys, not refused.
    pub fn from_value(value: Value) -> Result<Entry, InvalidEntry> {
        let Value::Object(mut map) = value else {
            return Err(InvalidEntry(format!(
                "entry is {}, not an object",
                crate::json_text::kind(&value)
            )));
        };
        let from = required_string(&mut map, "from")?;
        let text = required_string(&mut map, "text")?;
        let timestamp = required_string(&mut map, "timestamp")?;
        let summary = optional_string(&mut map, "summary")?;
        let color = optional_string(&mut map, "color")?;
        let from_plugin = optional_string(&mut map, "from_plugin")?;
        let kind = optional_string(&mut map, "type")?.or_else(|| Some("message".to_owned()));
        let read = match map.shift_remove("read") {
            None => None,
            Some(Value::Bool(b)) => Some(b),
            Some(other) => {
                return Err(InvalidEntry(format!(
                    "\"read\" is {}, not a boolean",
                    crate::json_text::kind(&other)
                )));
            }
        };
        let msg_v = take_if(&mut map, "msgV", |v| v.as_u64());
        let msg_id = take_if(&mut map, "msg_id", |v| v.as_str().map(str::to_owned));
        let lead_sig = take_if(&mut map, "lead_sig", |v| v.as_str().map(str::to_owned));
        // The parsed map keeps the room of every key it held; an entry
        // keeps only what is left in it (usually nothing), or a 100 000-entry
        // inbox holds 70 MB of empty maps.
        let map = if map.is_empty() {
            Map::new()
        } else {
            map.into_iter().collect()
        };
        Ok(Entry {
            from,
            text,
            summary,
            timestamp,
            color,
            from_plugin,
            msg_v,
            msg_id,
            kind,
            read,
            lead_sig,
            extra: map,
        })
    }
}

impl Entry {
    /// The entry of one element's JSON text, read straight into its fields
    /// (no intermediate map: a reader of 10,000 entries spent most of its
    /// time building and emptying maps), when the text is plain: each known
    /// key once and of its expected type, strings strictly valid. `None`
    /// otherwise, and [`Entry::from_value`] of the lenient parse decides:
    /// whatever this accepts, that path accepts as the same entry.
    pub(crate) fn from_plain_json(raw: &str) -> Option<Entry> {
        serde_json::from_str::<Plain>(raw).ok().map(|p| p.0)
    }

    /// Every entry of a file's bytes (a JSON array), in one pass, when
    /// each is plain as [`Entry::from_plain_json`] takes it; `None`
    /// otherwise (the caller reads it element by element, which decides).
    pub(crate) fn all_plain(bytes: &[u8]) -> Option<Vec<Entry>> {
        let plain: Vec<Plain> = serde_json::from_str(plain_text(bytes)?).ok()?;
        Some(plain.into_iter().map(|p| p.0).collect())
    }

    /// [`Entry::all_plain`], one entry at a time: each is read into the one
    /// entry this keeps (its strings' buffers reused) and handed to `each`,
    /// so a reader that needs each entry once holds one, not 10,000 (whose
    /// memory, first touched, was a quarter of printing them, and their
    /// allocations a tenth). `Ok(false)` when the bytes are not an array of
    /// plain entries: `each` may have seen the entries before the first
    /// that is not, and the caller discards what it made of them. An error
    /// of `each` ends the pass and is returned.
    pub(crate) fn each_plain(
        bytes: &[u8],
        each: impl FnMut(&Entry) -> std::io::Result<()>,
    ) -> std::io::Result<bool> {
        let Some(text) = plain_text(bytes) else {
            return Ok(false);
        };
        let mut visitor = EachPlain { each, failed: None };
        let mut de = serde_json::Deserializer::from_str(text);
        let parsed = de.deserialize_seq(&mut visitor).and_then(|()| de.end());
        match visitor.failed {
            Some(e) => Err(e),
            None => Ok(parsed.is_ok()),
        }
    }

    /// No field set: what [`plain_into`] reads an entry into.
    fn blank() -> Entry {
        Entry {
            from: String::new(),
            text: String::new(),
            summary: None,
            timestamp: String::new(),
            color: None,
            from_plugin: None,
            msg_v: None,
            msg_id: None,
            kind: None,
            read: None,
            lead_sig: None,
            extra: Map::new(),
        }
    }
}

/// A file's bytes as text for the plain readers, its BOM dropped; `None`
/// when they are not UTF-8. Checked once, whole: parsed from a `str`, no
/// string in it is checked again (from bytes, each one was).
fn plain_text(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)).ok()
}

/// [`Entry::each_plain`]'s reader of the array.
struct EachPlain<F> {
    each: F,
    failed: Option<std::io::Error>,
}

impl<'de, F: FnMut(&Entry) -> std::io::Result<()>> serde::de::Visitor<'de> for &mut EachPlain<F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of entries")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut entry = Entry::blank();
        while seq.next_element_seed(PlainInto(&mut entry))?.is_some() {
            if let Err(e) = (self.each)(&entry) {
                self.failed = Some(e);
                return Err(serde::de::Error::custom("stopped by the reader"));
            }
        }
        Ok(())
    }
}

/// [`Entry::from_plain_json`]'s reader.
struct Plain(Entry);

impl<'de> Deserialize<'de> for Plain {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut e = Entry::blank();
        serde::de::DeserializeSeed::deserialize(PlainInto(&mut e), d)?;
        Ok(Plain(e))
    }
}

/// One entry read into the entry it holds (see [`plain_into`]).
struct PlainInto<'a>(&'a mut Entry);

impl<'de> serde::de::DeserializeSeed<'de> for PlainInto<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for PlainInto<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an entry")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        plain_into(map, self.0)
    }
}

/// Reads a plain entry's keys straight into `e`: each known key once and
/// of its expected type, `from`, `text` and `timestamp` there, `type`
/// filled in when missing. The strings of `e` (an entry read before, or
/// [`Entry::blank`]) keep their buffers: a reader of 10,000 entries
/// allocates for the longest, not for each. A field this entry does not
/// name is emptied; on an error `e` is half read, and the caller drops
/// what it read.
fn plain_into<'de, A: serde::de::MapAccess<'de>>(
    mut map: A,
    e: &mut Entry,
) -> Result<(), A::Error> {
    use serde::de::Error;
    /// The keys this element named (each once).
    #[derive(Default)]
    struct Seen {
        from: bool,
        text: bool,
        timestamp: bool,
        summary: bool,
        color: bool,
        from_plugin: bool,
        kind: bool,
        read: bool,
        msg_v: bool,
        msg_id: bool,
        lead_sig: bool,
    }
    fn once<E: Error>(seen: &mut bool, k: &str) -> Result<(), E> {
        match std::mem::replace(seen, true) {
            true => Err(E::custom(format!("{k} twice"))),
            false => Ok(()),
        }
    }
    let mut seen = Seen::default();
    e.extra.clear();
    while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
        let (slot, named) = match key.as_ref() {
            "from" => (&mut e.from, &mut seen.from),
            "text" => (&mut e.text, &mut seen.text),
            "timestamp" => (&mut e.timestamp, &mut seen.timestamp),
            "summary" => (filled(&mut e.summary), &mut seen.summary),
            "color" => (filled(&mut e.color), &mut seen.color),
            "from_plugin" => (filled(&mut e.from_plugin), &mut seen.from_plugin),
            "type" => (filled(&mut e.kind), &mut seen.kind),
            "msg_id" => (filled(&mut e.msg_id), &mut seen.msg_id),
            "lead_sig" => (filled(&mut e.lead_sig), &mut seen.lead_sig),
            "read" => {
                once(&mut seen.read, "read")?;
                e.read = Some(map.next_value()?);
                continue;
            }
            "msgV" => {
                once(&mut seen.msg_v, "msgV")?;
                e.msg_v = Some(map.next_value()?);
                continue;
            }
            other => {
                let v: Value = map.next_value()?;
                if e.extra.insert(other.to_owned(), v).is_some() {
                    return Err(A::Error::custom(format!("{other} twice")));
                }
                continue;
            }
        };
        once(named, &key)?;
        map.next_value_seed(StrInto(slot))?;
    }
    for (named, k) in [
        (seen.from, "from"),
        (seen.text, "text"),
        (seen.timestamp, "timestamp"),
    ] {
        if !named {
            return Err(A::Error::missing_field(k));
        }
    }
    for (named, slot) in [
        (seen.summary, &mut e.summary),
        (seen.color, &mut e.color),
        (seen.from_plugin, &mut e.from_plugin),
        (seen.msg_id, &mut e.msg_id),
        (seen.lead_sig, &mut e.lead_sig),
    ] {
        if !named {
            *slot = None;
        }
    }
    if !seen.read {
        e.read = None;
    }
    if !seen.msg_v {
        e.msg_v = None;
    }
    if !seen.kind {
        let kind = filled(&mut e.kind);
        kind.clear();
        kind.push_str("message");
    }
    Ok(())
}

/// The string of an optional field, made if there was none (its buffer
/// kept if there was).
fn filled(slot: &mut Option<String>) -> &mut String {
    slot.get_or_insert_with(String::new)
}

/// A JSON string read into a string that is there, its buffer reused.
struct StrInto<'a>(&'a mut String);

impl<'de> serde::de::DeserializeSeed<'de> for StrInto<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for StrInto<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        self.0.clear();
        self.0.push_str(v);
        Ok(())
    }
}

fn required_string(map: &mut Map<String, Value>, key: &str) -> Result<String, InvalidEntry> {
    match map.shift_remove(key) {
        Some(Value::String(s)) => Ok(s),
        None => Err(InvalidEntry(format!("\"{key}\" is missing"))),
        Some(other) => Err(InvalidEntry(format!(
            "\"{key}\" is {}, not a string",
            crate::json_text::kind(&other)
        ))),
    }
}

fn optional_string(
    map: &mut Map<String, Value>,
    key: &str,
) -> Result<Option<String>, InvalidEntry> {
    match map.shift_remove(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(InvalidEntry(format!(
            "\"{key}\" is {}, not a string",
            crate::json_text::kind(&other)
        ))),
    }
}

/// Takes `key` out of the map when `f` accepts its value; otherwise leaves
/// it among the unknown keys.
fn take_if<T>(
    map: &mut Map<String, Value>,
    key: &str,
    f: impl Fn(&Value) -> Option<T>,
) -> Option<T> {
    let t = f(map.get(key)?)?;
    map.shift_remove(key);
    Some(t)
}

impl Serialize for Entry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        self.serialize_fields(&mut m)?;
        m.end()
    }
}

impl Entry {
    /// The entry's keys, in the order it is written, into a map being
    /// serialized (so a caller can add keys of its own after them).
    pub fn serialize_fields<M: serde::ser::SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("from", &self.from)?;
        m.serialize_entry("text", &self.text)?;
        if let Some(v) = &self.summary {
            m.serialize_entry("summary", v)?;
        }
        m.serialize_entry("timestamp", &self.timestamp)?;
        if let Some(v) = &self.color {
            m.serialize_entry("color", v)?;
        }
        if let Some(v) = &self.from_plugin {
            m.serialize_entry("from_plugin", v)?;
        }
        if let Some(v) = &self.msg_v {
            m.serialize_entry("msgV", v)?;
        }
        if let Some(v) = &self.msg_id {
            m.serialize_entry("msg_id", v)?;
        }
        if let Some(v) = &self.kind {
            m.serialize_entry("type", v)?;
        }
        if let Some(v) = &self.read {
            m.serialize_entry("read", v)?;
        }
        if let Some(v) = &self.lead_sig {
            m.serialize_entry("lead_sig", v)?;
        }
        for (k, v) in &self.extra {
            m.serialize_entry(k, v)?;
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Entry::from_value(Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_new_entry_has_the_full_2_1_328_envelope_in_order() {
        let e = Entry::new(
            "bob",
            "hi".into(),
            Some("greeting".into()),
            Some("blue".into()),
        );
        let text = crate::json_text::to_compact(&e);
        let id = e.msg_id.as_deref().unwrap();
        assert_eq!(
            text,
            format!(
                r#"{{"from":"bob","text":"hi","summary":"greeting","timestamp":"{}","color":"blue","msgV":1,"msg_id":"{id}","type":"message","read":false}}"#,
                e.timestamp
            )
        );
        assert_eq!(uuid::Uuid::parse_str(id).unwrap().get_version_num(), 4);
        assert!(crate::clock::ms_from_iso(&e.timestamp).is_some());
        assert_ne!(Entry::new("bob", "hi".into(), None, None).msg_id, e.msg_id);
    }

    #[test]
    fn every_field_and_unknown_keys_are_written_in_order() {
        let mut e = Entry::new(
            "team-lead",
            "t".into(),
            Some("s".into()),
            Some("red".into()),
        );
        e.from_plugin = Some("p".into());
        e.lead_sig = Some("sig".into());
        e.extra.insert("zzz".into(), json!(1));
        e.extra.insert("aaa".into(), json!({"x": [true]}));
        let v: Value = serde_json::to_value(&e).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "from",
                "text",
                "summary",
                "timestamp",
                "color",
                "from_plugin",
                "msgV",
                "msg_id",
                "type",
                "read",
                "lead_sig",
                "zzz",
                "aaa"
            ]
        );
        assert_eq!(Entry::from_value(v).unwrap(), e, "round trip");
    }

    #[test]
    fn a_2_1_88_entry_reads_with_defaults() {
        let e = Entry::from_value(json!({
            "from": "bob", "text": "old", "timestamp": "2025-01-01T00:00:00.000Z", "read": true
        }))
        .unwrap();
        assert_eq!(
            e.kind.as_deref(),
            Some("message"),
            "missing type reads as message"
        );
        assert_eq!((e.msg_id.as_deref(), e.msg_v), (None, None));
        assert!(!e.is_unread());
    }

    #[test]
    fn validation_follows_the_reference() {
        let base = json!({"from": "a", "text": "b", "timestamp": "c"});
        assert!(Entry::from_value(base.clone()).is_ok());
        for (key, bad) in [
            ("from", json!(null)),
            ("text", json!(1)),
            ("timestamp", json!(false)),
            ("type", json!(3)),
            ("color", json!([])),
            ("summary", json!(null)),
            ("from_plugin", json!({})),
            ("read", json!("no")),
        ] {
            let mut v = base.clone();
            v[key] = bad;
            let err = Entry::from_value(v).unwrap_err();
            assert!(err.0.contains(key), "{err}");
        }
        for missing in ["from", "text", "timestamp"] {
            let mut v = base.clone();
            v.as_object_mut().unwrap().remove(missing);
            assert!(Entry::from_value(v).unwrap_err().0.contains("missing"));
        }
        assert!(Entry::from_value(json!("text")).is_err());
    }

    #[test]
    fn odd_envelope_values_are_kept_as_unknown_keys() {
        let e = Entry::from_value(json!({
            "from": "a", "text": "b", "timestamp": "c", "msgV": "1", "msg_id": 7
        }))
        .unwrap();
        assert_eq!((e.msg_v, e.msg_id.as_ref()), (None, None));
        assert_eq!(e.extra.get("msgV"), Some(&json!("1")));
        assert_eq!(e.extra.get("msg_id"), Some(&json!(7)));
    }

    #[test]
    fn identity_is_msg_id_plus_the_triple() {
        let a = Entry::new("bob", "same".into(), None, None);
        let mut b = a.clone();
        assert_eq!(a.key(), b.key());
        b.msg_id = Some(uuid::Uuid::new_v4().to_string());
        assert_ne!(a.key(), b.key(), "same text, different msg_id");
        let mut c = a.clone();
        c.summary = Some("other summary".into());
        assert_eq!(a.key(), c.key(), "summary is not part of the identity");
    }
}
