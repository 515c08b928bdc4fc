//! JSON text exactly as Claude Code writes it and as leniently as it must be
//! read.
//!
//! Claude Code writes files with `JSON.stringify(value, null, 2)` and no
//! trailing newline; protocol frames with compact `JSON.stringify(value)`.
//! serde_json's pretty printer with a two-space indent produces the same
//! bytes for the values these files hold (integers, strings, arrays, objects;
//! `preserve_order` keeps key order). JavaScript may also write lone UTF-16
//! surrogate escapes (`\ud800`), which serde_json rejects; [`parse_lenient`]
//! replaces them with U+FFFD before parsing, so such a file is still read.
//! [`kind`] names what a value is, for the messages that refuse it.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::borrow::Cow;

/// `JSON.stringify(value, null, 2)`: two-space indent, no trailing newline.
pub fn to_pretty<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"  ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    value
        .serialize(&mut ser)
        .expect("serializing plain data into a Vec cannot fail");
    out
}

/// `JSON.stringify(value)`: compact.
pub fn to_compact<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("serializing plain data into a String cannot fail")
}

/// Parses JSON text, tolerating a UTF-8 BOM and lone surrogate escapes.
pub fn parse_lenient<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match serde_json::from_slice(bytes) {
        Ok(v) => Ok(v),
        Err(first) => match repair_surrogates(bytes) {
            Cow::Owned(fixed) => serde_json::from_slice(&fixed).map_err(|_| first),
            Cow::Borrowed(_) => Err(first),
        },
    }
}

/// What `value` is, with its article, for a message that refuses it
/// (`top level is an object, not an array`): `null`, `a boolean`,
/// `a number`, `a string`, `an array` or `an object`.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Replaces `\uD800`–`\uDFFF` escapes that are not part of a valid pair with
/// `\uFFFD`. Returns the input untouched when there is nothing to replace.
pub fn repair_surrogates(bytes: &[u8]) -> Cow<'_, [u8]> {
    fn hex4(b: &[u8]) -> Option<u16> {
        let s = std::str::from_utf8(b.get(..4)?).ok()?;
        u16::from_str_radix(s, 16).ok()
    }
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 1 < bytes.len() {
            if bytes[i + 1] == b'u'
                && let Some(cp) = hex4(&bytes[i + 2..])
            {
                let high = (0xD800..0xDC00).contains(&cp);
                let low = (0xDC00..0xE000).contains(&cp);
                let paired = high
                    && bytes.get(i + 6) == Some(&b'\\')
                    && bytes.get(i + 7) == Some(&b'u')
                    && hex4(&bytes[(i + 8).min(bytes.len())..])
                        .is_some_and(|n| (0xDC00..0xE000).contains(&n));
                if paired {
                    if let Some(o) = out.as_mut() {
                        o.extend_from_slice(&bytes[i..i + 12]);
                    }
                    i += 12;
                    continue;
                }
                if high || low {
                    let o = out.get_or_insert_with(|| bytes[..i].to_vec());
                    o.extend_from_slice(b"\\ufffd");
                    i += 6;
                    continue;
                }
            }
            if let Some(o) = out.as_mut() {
                o.extend_from_slice(&bytes[i..i + 2]);
            }
            i += 2;
            continue;
        }
        if let Some(o) = out.as_mut() {
            o.push(bytes[i]);
        }
        i += 1;
    }
    match out {
        Some(o) => Cow::Owned(o),
        None => Cow::Borrowed(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pretty_matches_json_stringify_with_two_spaces() {
        let v = json!({"name": "t", "members": [], "n": 1, "o": {"a": [1, 2]}});
        let text = String::from_utf8(to_pretty(&v)).unwrap();
        assert_eq!(
            text,
            "{\n  \"name\": \"t\",\n  \"members\": [],\n  \"n\": 1,\n  \"o\": {\n    \"a\": [\n      1,\n      2\n    ]\n  }\n}"
        );
    }

    #[test]
    fn compact_escapes_like_javascript() {
        let s = to_compact(&json!(["a\"b\\c\n\u{1f}/é\u{2028}"]));
        assert_eq!(s, "[\"a\\\"b\\\\c\\n\\u001f/é\u{2028}\"]");
    }

    #[test]
    fn kind_names_each_json_type_with_its_article() {
        let kinds: Vec<&str> = [
            json!(null),
            json!(true),
            json!(1.5),
            json!("s"),
            json!([]),
            json!({}),
        ]
        .iter()
        .map(kind)
        .collect();
        assert_eq!(
            kinds,
            [
                "null",
                "a boolean",
                "a number",
                "a string",
                "an array",
                "an object"
            ]
        );
    }

    #[test]
    fn lone_surrogates_are_read_not_rejected() {
        let v: Value = parse_lenient(br#"{"t":"x\ud800y","ok":"\ud83d\ude00"}"#).unwrap();
        assert_eq!(v["t"], "x\u{fffd}y");
        assert_eq!(v["ok"], "😀");
        assert!(parse_lenient::<Value>(b"{\"t\":").is_err());
    }
}
