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
        let mut all = Vec::new();
        let plain = Entry::each_plain(bytes, |e| {
            all.push(e);
            Ok(())
        });
        plain.ok()?.then_some(all)
    }

    /// [`Entry::all_plain`], one entry at a time: each is handed to `each`
    /// as it is read and none is kept, so a reader that needs each entry
    /// once holds one, not 10,000 (whose memory, first touched, was a
    /// quarter of printing them). `Ok(false)` when the bytes are not an
    /// array of plain entries: `each` may have seen the entries before the
    /// first that is not, and the caller discards what it made of them. An
    /// error of `each` ends the pass and is returned.
    pub(crate) fn each_plain(
        bytes: &[u8],
        each: impl FnMut(Entry) -> std::io::Result<()>,
    ) -> std::io::Result<bool> {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        // Checked as UTF-8 once, whole: parsed from a `str`, no string in
        // it is checked again (from bytes, each one was).
        let Ok(text) = std::str::from_utf8(bytes) else {
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
}

/// [`Entry::each_plain`]'s reader of the array.
struct EachPlain<F> {
    each: F,
    failed: Option<std::io::Error>,
}

impl<'de, F: FnMut(Entry) -> std::io::Result<()>> serde::de::Visitor<'de> for &mut EachPlain<F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of entries")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(Plain(e)) = seq.next_element()? {
            if let Err(e) = (self.each)(e) {
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
        d.deserialize_map(PlainVisitor)
    }
}

struct PlainVisitor;

impl<'de> serde::de::Visitor<'de> for PlainVisitor {
    type Value = Plain;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an entry")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Plain, A::Error> {
        use serde::de::Error;
        let dup = |k: &str| A::Error::custom(format!("{k} twice"));
        let mut e = Entry {
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
        };
        let (mut from, mut text, mut timestamp) = (None, None, None);
        fn put<T, E: serde::de::Error>(slot: &mut Option<T>, v: T, k: &str) -> Result<(), E> {
            if slot.replace(v).is_some() {
                return Err(E::custom(format!("{k} twice")));
            }
            Ok(())
        }
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "from" => put(&mut from, map.next_value::<String>()?, "from")?,
                "text" => put(&mut text, map.next_value::<String>()?, "text")?,
                "timestamp" => put(&mut timestamp, map.next_value::<String>()?, "timestamp")?,
                "summary" => put(&mut e.summary, map.next_value::<String>()?, "summary")?,
                "color" => put(&mut e.color, map.next_value::<String>()?, "color")?,
                "from_plugin" => put(
                    &mut e.from_plugin,
                    map.next_value::<String>()?,
                    "from_plugin",
                )?,
                "type" => put(&mut e.kind, map.next_value::<String>()?, "type")?,
                "read" => put(&mut e.read, map.next_value::<bool>()?, "read")?,
                "msgV" => put(&mut e.msg_v, map.next_value::<u64>()?, "msgV")?,
                "msg_id" => put(&mut e.msg_id, map.next_value::<String>()?, "msg_id")?,
                "lead_sig" => put(&mut e.lead_sig, map.next_value::<String>()?, "lead_sig")?,
                other => {
                    let v: Value = map.next_value()?;
                    if e.extra.insert(other.to_owned(), v).is_some() {
                        return Err(dup(other));
                    }
                }
            }
        }
        e.from = from.ok_or_else(|| A::Error::missing_field("from"))?;
        e.text = text.ok_or_else(|| A::Error::missing_field("text"))?;
        e.timestamp = timestamp.ok_or_else(|| A::Error::missing_field("timestamp"))?;
        e.kind.get_or_insert_with(|| "message".to_owned());
        Ok(Plain(e))
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
