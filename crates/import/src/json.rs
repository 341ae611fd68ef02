//! rt-app's JSON as written: comments, trailing commas and repeated keys (an event list)
//! are accepted, and objects keep their keys in file order.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// A JSON value whose objects keep every key, repeated ones included, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonValue {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number (rt-app's are integers; floats are kept to be refused by name).
    Num(f64),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<JsonValue>),
    /// An object, its entries in file order.
    Obj(Vec<(String, JsonValue)>),
}

impl JsonValue {
    /// The JSON type's name, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            JsonValue::Null => "null",
            JsonValue::Bool(_) => "a boolean",
            JsonValue::Num(_) => "a number",
            JsonValue::Str(_) => "a string",
            JsonValue::Arr(_) => "an array",
            JsonValue::Obj(_) => "an object",
        }
    }

    /// The value of the last entry named `key` (json-c keeps the last of repeated keys).
    pub fn get(&self, key: &str) -> Option<&JsonValue> {
        match self {
            JsonValue::Obj(e) => e.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = JsonValue;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<JsonValue, E> {
        Ok(JsonValue::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<JsonValue, E> {
        Ok(JsonValue::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<JsonValue, E> {
        Ok(JsonValue::Num(v as f64))
    }
    fn visit_u64<E>(self, v: u64) -> Result<JsonValue, E> {
        Ok(JsonValue::Num(v as f64))
    }
    fn visit_f64<E>(self, v: f64) -> Result<JsonValue, E> {
        Ok(JsonValue::Num(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<JsonValue, E> {
        Ok(JsonValue::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<JsonValue, E> {
        Ok(JsonValue::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<JsonValue, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(JsonValue::Arr(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonValue, A::Error> {
        let mut out = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, JsonValue>()? {
            out.push((k, v));
        }
        Ok(JsonValue::Obj(out))
    }
}

impl<'de> Deserialize<'de> for JsonValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JsonValue, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

/// A JSON syntax error with its 1-based line and column.
#[derive(Debug)]
pub struct SyntaxError {
    /// Line, 1-based.
    pub line: usize,
    /// Column, 1-based.
    pub col: usize,
    /// serde_json's message, without its position.
    pub message: String,
}

/// Parses rt-app JSON: `/* */` and `//` comments and a comma before `}` or `]` are blanked
/// out first (rt-app's parser, json-c, and its workgen accept them), so positions stay those
/// of the file.
pub fn parse(text: &str) -> Result<JsonValue, SyntaxError> {
    let clean = blank_comments_and_trailing_commas(text);
    serde_json::from_str(&clean).map_err(|e| {
        let full = e.to_string();
        let message = full.rsplit_once(" at line ").map(|(m, _)| m.to_string()).unwrap_or(full);
        SyntaxError { line: e.line(), col: e.column(), message }
    })
}

/// `text` with comments and trailing commas replaced by spaces (newlines kept).
fn blank_comments_and_trailing_commas(text: &str) -> String {
    let mut b: Vec<u8> = text.as_bytes().to_vec();
    let n = b.len();
    let mut i = 0;
    // The position of a comma seen outside strings, until the next significant byte.
    let mut comma: Option<usize> = None;
    while i < n {
        match b[i] {
            b'"' => {
                comma = None;
                i += 1;
                while i < n && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'/' if i + 1 < n && b[i + 1] == b'/' => {
                while i < n && b[i] != b'\n' {
                    b[i] = b' ';
                    i += 1;
                }
            }
            b'/' if i + 1 < n && b[i + 1] == b'*' => {
                let end = text[i + 2..].find("*/").map(|e| i + 2 + e + 2).unwrap_or(n);
                for c in &mut b[i..end] {
                    if *c != b'\n' {
                        *c = b' ';
                    }
                }
                i = end;
            }
            b',' => {
                comma = Some(i);
                i += 1;
            }
            b'}' | b']' => {
                if let Some(c) = comma.take() {
                    b[c] = b' ';
                }
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                comma = None;
                i += 1;
            }
        }
    }
    // Only ASCII bytes outside strings were replaced, by ASCII spaces.
    String::from_utf8(b).expect("still UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_stay_in_file_order() {
        let j = parse(r#"{ "run": 1, "sleep": 2, "run": 3 }"#).unwrap();
        let JsonValue::Obj(e) = &j else { panic!() };
        let keys: Vec<&str> = e.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["run", "sleep", "run"]);
        assert_eq!(
            j.get("run"),
            Some(&JsonValue::Num(3.0)),
            "the last one wins on lookup, as in json-c"
        );
    }

    #[test]
    fn comments_and_trailing_commas_are_accepted_and_keep_positions() {
        let text = "{\n  /* a \"quoted\" comment\n  over lines */ \"a\": [1, 2,], // end\n  \"b\": \"x // not a comment\",\n}\n";
        let j = parse(text).unwrap();
        assert_eq!(
            j.get("a"),
            Some(&JsonValue::Arr(vec![JsonValue::Num(1.0), JsonValue::Num(2.0)]))
        );
        assert_eq!(j.get("b"), Some(&JsonValue::Str("x // not a comment".into())));
        let e = parse("{\n  /* x */ \"a\": 1,\n  \"b\" 2\n}").unwrap_err();
        assert_eq!((e.line, e.col), (3, 7), "{}", e.message);
        assert!(!e.message.contains("line"), "the position is given apart: {}", e.message);
    }
}
