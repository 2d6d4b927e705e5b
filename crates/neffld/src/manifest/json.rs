//! Reading one JSON member: a duplicate-key pass, then typed deserialisation.
//!
//! serde_json keeps the last of two equal keys without a word, and the
//! reference parser keeps the first; a manifest with a duplicated `var` or
//! `dma_queue` name would then mean different things to different readers.
//! So every manifest is first walked once with a visitor that remembers the
//! keys of each object and stops at the first repeat (parse.md §5, row 20).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::ManifestError;

/// Deserialises `bytes` (the body of `member`) into `T` after proving no
/// object in it repeats a key.
pub fn parse<'a, T: Deserialize<'a>>(member: &str, bytes: &'a [u8]) -> Result<T, ManifestError> {
    check_duplicate_keys(member, bytes)?;
    serde_json::from_slice(bytes).map_err(|e| ManifestError::Json {
        member: member.to_string(),
        detail: e.to_string(),
    })
}

/// Walks the document once; the first repeated key of any object is an error.
pub fn check_duplicate_keys(member: &str, bytes: &[u8]) -> Result<(), ManifestError> {
    let dup = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let walked = KeyCheck { dup: &dup }
        .deserialize(&mut de)
        .and_then(|()| de.end());
    match (walked, dup.into_inner()) {
        (_, Some(key)) => Err(ManifestError::DuplicateKey {
            key,
            member: member.to_string(),
        }),
        (Err(e), None) => Err(ManifestError::Json {
            member: member.to_string(),
            detail: e.to_string(),
        }),
        (Ok(()), None) => Ok(()),
    }
}

/// A seed and visitor that accepts any JSON and records the first key that
/// repeats inside one object.
#[derive(Clone, Copy)]
struct KeyCheck<'s> {
    dup: &'s RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for KeyCheck<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeyCheck<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Keys borrow from the member when they hold no escapes; small
        // objects (nearly all) are checked by a linear scan, larger ones by hash.
        let mut few: Vec<Cow<'de, str>> = Vec::new();
        let mut many: HashSet<Cow<'de, str>> = HashSet::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let dup = if many.is_empty() && few.len() < 16 {
                let d = few.contains(&key);
                if !d {
                    few.push(key.clone());
                }
                d
            } else {
                many.extend(few.drain(..));
                !many.insert(key.clone())
            };
            if dup {
                *self.dup.borrow_mut() = Some(key.into_owned());
                return Err(de::Error::custom("duplicate key"));
            }
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

/// Reads an object key, borrowed when possible.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(KeySeed)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}

/// A short rendering of a JSON value for "found …" in messages.
pub fn describe(v: &serde_json::Value) -> String {
    let s = v.to_string();
    if s.len() > 60 {
        let mut cut = 57;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}...", &s[..cut])
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_found_at_any_depth() {
        assert!(check_duplicate_keys("m", br#"{"a":1,"b":{"c":[{"d":1}]}}"#).is_ok());
        let e = check_duplicate_keys("m.json", br#"{"a":1,"b":[{"c":1,"c":2}]}"#).unwrap_err();
        assert_eq!(e.to_string(), "duplicate key c in m.json");
        let e = check_duplicate_keys("m", br#"{"a":1,"a":1}"#).unwrap_err();
        assert!(matches!(e, ManifestError::DuplicateKey { ref key, .. } if key == "a"));
        // Escaped spellings of the same key are the same key.
        assert!(check_duplicate_keys("m", br#"{"a":1,"\u0061":2}"#).is_err());
    }

    #[test]
    fn invalid_json_and_utf8_are_json_errors() {
        assert!(matches!(
            check_duplicate_keys("m", b"{\"a\":"),
            Err(ManifestError::Json { .. })
        ));
        assert!(matches!(
            check_duplicate_keys("m", b"{\"a\":\"\xff\"}"),
            Err(ManifestError::Json { .. })
        ));
        assert!(matches!(
            check_duplicate_keys("m", b"{} x"),
            Err(ManifestError::Json { .. })
        ));
    }
}
