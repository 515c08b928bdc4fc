//! A borrowed, allocation-light check of one entry's JSON text: the reader
//! validation of reference §3.2 ([`Entry::from_value`]) in a single pass,
//! without building a map, keeping only what a send needs.
//!
//! The one rule this module must keep: **whatever [`check`] accepts,
//! `Entry::from_value(parse_lenient(text))` accepts too.** (The reverse need
//! not hold: anything refused here is re-read by the full path, which has
//! the last word.) So it is strict wherever the full path is:
//!
//! * every value is parsed, not skipped (never `IgnoredAny`, which does not
//!   check a number's range), so a number out of range (`1e400`) or a
//!   malformed string is refused as the full parse refuses it;
//! * strings are parsed strictly, so lone surrogate escapes (which only the
//!   lenient reader repairs) are refused here and left to the full path;
//! * a known key given twice is refused (the full path keeps the last one,
//!   and decides);
//! * `from`, `text`, `timestamp` must be strings; `type`, `color`, `summary`,
//!   `from_plugin` strings if present (`null` is not a string); `read` a
//!   boolean if present. `msg_id` counts only when it is a string, like
//!   [`Entry::from_value`], which keeps any other value as an unknown key.
//!
//! [`Entry::from_value`]: super::entry::Entry::from_value

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// What a send needs of a valid entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct View {
    pub msg_id: Option<Box<str>>,
    pub read: Option<bool>,
    /// `text` may be a protocol frame ([`may_be_frame`]).
    pub brace: bool,
}

/// The entry's view, or `None` when the full path must decide.
pub(crate) fn check(raw: &str) -> Option<View> {
    // Not an ignored failure: an entry this fast path cannot read is the
    // full path's to judge (and report), so its error is the answer.
    serde_json::from_str::<View>(raw).ok()
}

/// Whether a `text` can hold a protocol frame: only text starting with `{`
/// (after whitespace) is ever parsed as one.
pub(crate) fn may_be_frame(text: &str) -> bool {
    text.trim_start().starts_with('{')
}

#[derive(Clone, Copy)]
enum Key {
    From,
    Text,
    Timestamp,
    Type,
    Color,
    Summary,
    FromPlugin,
    Read,
    MsgId,
    Other,
}

impl Key {
    fn bit(self) -> u16 {
        match self {
            Key::From => 1,
            Key::Text => 1 << 1,
            Key::Timestamp => 1 << 2,
            Key::Type => 1 << 3,
            Key::Color => 1 << 4,
            Key::Summary => 1 << 5,
            Key::FromPlugin => 1 << 6,
            Key::Read => 1 << 7,
            Key::MsgId => 1 << 8,
            Key::Other => 0,
        }
    }
}

const REQUIRED: u16 = 1 | (1 << 1) | (1 << 2);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, k: &str) -> Result<Key, E> {
                Ok(match k {
                    "from" => Key::From,
                    "text" => Key::Text,
                    "timestamp" => Key::Timestamp,
                    "type" => Key::Type,
                    "color" => Key::Color,
                    "summary" => Key::Summary,
                    "from_plugin" => Key::FromPlugin,
                    "read" => Key::Read,
                    "msg_id" => Key::MsgId,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// A string value; returns whether it may be a protocol frame.
struct Str(bool);

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Str, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Str;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Str, E> {
                Ok(Str(may_be_frame(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Any JSON value, fully parsed (not skipped), then discarded. `Some` holds
/// the value when it is a string.
struct Any(Option<Box<str>>);

impl<'de> Deserialize<'de> for Any {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Any, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Any;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Any, E> {
                Ok(Any(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Any, E> {
                Ok(Any(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Any, E> {
                Ok(Any(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Any, E> {
                Ok(Any(None))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Any, E> {
                Ok(Any(Some(s.into())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Any, E> {
                Ok(Any(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Any, A::Error> {
                while seq.next_element::<Discard>()?.is_some() {}
                Ok(Any(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Any, A::Error> {
                while map.next_key::<Discard>()?.is_some() {
                    map.next_value::<Discard>()?;
                }
                Ok(Any(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// [`Any`] without keeping even a string.
struct Discard;

impl<'de> Deserialize<'de> for Discard {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Discard, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Discard;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Discard, E> {
                Ok(Discard)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Discard, E> {
                Ok(Discard)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Discard, E> {
                Ok(Discard)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Discard, E> {
                Ok(Discard)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Discard, E> {
                Ok(Discard)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Discard, E> {
                Ok(Discard)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Discard, A::Error> {
                while seq.next_element::<Discard>()?.is_some() {}
                Ok(Discard)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Discard, A::Error> {
                while map.next_key::<Discard>()?.is_some() {
                    map.next_value::<Discard>()?;
                }
                Ok(Discard)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for View {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<View, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = View;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an inbox entry")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<View, A::Error> {
                let mut seen = 0u16;
                let mut view = View {
                    msg_id: None,
                    read: None,
                    brace: false,
                };
                while let Some(key) = map.next_key::<Key>()? {
                    if seen & key.bit() != 0 {
                        return Err(de::Error::custom("a known key is given twice"));
                    }
                    seen |= key.bit();
                    match key {
                        Key::Text => view.brace = map.next_value::<Str>()?.0,
                        Key::From
                        | Key::Timestamp
                        | Key::Type
                        | Key::Color
                        | Key::Summary
                        | Key::FromPlugin => {
                            map.next_value::<Str>()?;
                        }
                        Key::Read => view.read = Some(map.next_value::<bool>()?),
                        Key::MsgId => view.msg_id = map.next_value::<Any>()?.0,
                        Key::Other => {
                            map.next_value::<Discard>()?;
                        }
                    }
                }
                if seen & REQUIRED != REQUIRED {
                    return Err(de::Error::custom("a required key is missing"));
                }
                Ok(view)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mailbox::entry::Entry;
    use proptest::prelude::*;
    use serde_json::Value;

    fn full(raw: &str) -> Option<Entry> {
        let v: Value = crate::json_text::parse_lenient(raw.as_bytes()).ok()?;
        Entry::from_value(v).ok()
    }

    /// The module rule, and that the view agrees with the full entry.
    fn agrees(raw: &str) {
        if let Some(v) = check(raw) {
            let e = full(raw).unwrap_or_else(|| panic!("view accepted, full path refused: {raw}"));
            assert_eq!(v.msg_id.as_deref(), e.msg_id.as_deref(), "{raw}");
            assert_eq!(v.read, e.read, "{raw}");
            assert_eq!(v.brace, may_be_frame(&e.text), "{raw}");
        }
    }

    #[test]
    fn valid_entries_are_accepted_with_their_id_read_flag_and_frame_hint() {
        let raw = r#"{"from":"a","text":" {\"type\":\"x\"}","timestamp":"t","msg_id":"m","read":true,"zz":[1,{"k":null}]}"#;
        let v = check(raw).unwrap();
        assert_eq!(v.msg_id.as_deref(), Some("m"));
        assert_eq!(v.read, Some(true));
        assert!(v.brace);
        agrees(raw);
    }

    #[test]
    fn what_the_full_path_refuses_or_decides_otherwise_is_left_to_it() {
        for raw in [
            r#"{"text":"b","timestamp":"c"}"#,
            r#"{"from":null,"text":"b","timestamp":"c"}"#,
            r#"{"from":"a","text":"b","timestamp":"c","summary":null}"#,
            r#"{"from":"a","text":"b","timestamp":"c","type":3}"#,
            r#"{"from":"a","text":"b","timestamp":"c","color":[]}"#,
            r#"{"from":"a","text":"b","timestamp":"c","from_plugin":{}}"#,
            r#"{"from":"a","text":"b","timestamp":"c","read":null}"#,
            r#"{"from":"a","text":"b","timestamp":"c","read":"no"}"#,
            r#"{"from":"a","text":"b","timestamp":"c","x":1e400}"#,
            r#"{"from":"a","text":"b","timestamp":"c","x":[[1e999]]}"#,
            r#"{"from":"a","text":"x\ud800","timestamp":"c"}"#,
            r#"{"from":"a","text":"b","timestamp":"c","x":"\udc00"}"#,
            r#"{"from":"a","from":"b","text":"b","timestamp":"c"}"#,
            r#"{"from":"a","text":"b","timestamp":"c","summary":null,"summary":"s"}"#,
            r#"["a","b","c"]"#,
            r#""text""#,
        ] {
            assert!(check(raw).is_none(), "{raw}");
        }
    }

    #[test]
    fn odd_envelope_values_are_not_ids() {
        let raw = r#"{"from":"a","text":"b","timestamp":"c","msgV":"1","msg_id":7,"lead_sig":[]}"#;
        assert_eq!(check(raw).unwrap().msg_id, None);
        agrees(raw);
        let raw = r#"{"from":"a","text":"b","timestamp":"c","msg_id":{"a":[1e5]}}"#;
        assert_eq!(check(raw).unwrap().msg_id, None);
        agrees(raw);
    }

    #[test]
    fn escaped_keys_mean_the_same_key() {
        let raw = r#"{"fr\u006fm":"a","text":"b","timestamp":"c","m\u0073g_id":"q\n"}"#;
        assert_eq!(check(raw).unwrap().msg_id.as_deref(), Some("q\n"));
        agrees(raw);
    }

    fn json_value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("1e400".to_owned()),
            Just("-0.5".to_owned()),
            Just("\"{\\\"type\\\"\"".to_owned()),
            Just("\"\\ud800\"".to_owned()),
            Just("\"s\"".to_owned()),
            Just("7".to_owned()),
        ];
        leaf.prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec(inner, 0..3).prop_map(|v| format!(
                    "{{{}}}",
                    v.iter()
                        .enumerate()
                        .map(|(i, x)| format!("\"k{i}\":{x}"))
                        .collect::<Vec<_>>()
                        .join(",")
                )),
            ]
        })
    }

    fn key() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            Just("from"),
            Just("text"),
            Just("timestamp"),
            Just("type"),
            Just("color"),
            Just("summary"),
            Just("from_plugin"),
            Just("read"),
            Just("msg_id"),
            Just("msgV"),
            Just("lead_sig"),
            Just("other"),
        ]
    }

    proptest! {
        #[test]
        fn whatever_the_view_accepts_the_full_path_accepts_alike(
            fields in prop::collection::vec((key(), json_value()), 0..8),
            base in any::<bool>(),
        ) {
            let mut parts: Vec<String> = Vec::new();
            if base {
                parts.extend(["\"from\":\"a\"", "\"text\":\"b\"", "\"timestamp\":\"c\""].map(String::from));
            }
            parts.extend(fields.iter().map(|(k, v)| format!("\"{k}\":{v}")));
            agrees(&format!("{{{}}}", parts.join(",")));
        }
    }
}
