//! Reading one JSON member: a checking pass, then typed deserialisation.
//!
//! serde_json keeps the last of two equal keys without a word, and the
//! reference parser keeps the first; a manifest with a duplicated `var` or
//! `dma_queue` name would then mean different things to different readers.
//! So every manifest is first walked once with a visitor that remembers the
//! keys of each object and stops at the first repeat (parse.md §5, row 20).
//!
//! The same walk counts the member's JSON values and stops past
//! [`MAX_VALUES`]: what a typed parse builds grows with the number of values,
//! not with the bytes, and a few bytes a value (`[0,0,0,…]`) compress a
//! thousandfold, so a NEFF of 267 KB could otherwise make every front end
//! spend gigabytes on one def.json before any check looked at it.
//!
//! Nothing is built as a `serde_json::Value` (32 bytes for the two of `0,`,
//! a map node per object): a member is read into typed records, and a part
//! whose form is checked later, or read only in part, is kept as its text
//! ([`RawValue`], borrowed from the member) and read typed from there, one
//! part at a time ([`object`], [`string`], [`elements`]). An engine json of
//! DMA blocks at the ceiling then peaks at 33 bytes a value beyond its
//! text, what the records keep, where it peaked at 110 (docs/performance.md).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
pub use serde_json::value::RawValue;

use super::ManifestError;

/// The most JSON values one manifest member may hold, counting every
/// scalar, array and object at any depth. The largest real manifest known
/// (a 4.7 MB engine json of a 2.0.99229-family NEFF, parse.md §13) holds
/// a few hundred thousand. What the typed records keep of a value is at
/// most about 33 bytes (a DMA descriptor's), so a member at the ceiling
/// parses within about 70 MiB beyond its own bytes, well inside the
/// default inflate floor (256 MiB); past it the member is refused before
/// anything is built.
pub const MAX_VALUES: u64 = 1 << 21;

/// A top-level table of a manifest bounded by a ceiling of its own: the
/// entries of the object, or the elements of the array, under `key`. For
/// tables whose entries cost far more to build than their values (one
/// variable becomes a record in every later stage).
#[derive(Clone, Copy, Debug)]
pub struct Table {
    pub key: &'static str,
    pub ceiling: u64,
}

/// Deserialises `bytes` (the body of `member`) into `T` after proving no
/// object in it repeats a key and that it holds at most [`MAX_VALUES`] values.
pub fn parse<'a, T: Deserialize<'a>>(member: &str, bytes: &'a [u8]) -> Result<T, ManifestError> {
    parse_with(member, bytes, &[])
}

/// [`parse`], with a ceiling on each of `tables` besides.
pub fn parse_with<'a, T: Deserialize<'a>>(
    member: &str,
    bytes: &'a [u8],
    tables: &[Table],
) -> Result<T, ManifestError> {
    check(member, bytes, MAX_VALUES, tables)?;
    serde_json::from_slice(bytes).map_err(|e| ManifestError::Json {
        member: member.to_string(),
        detail: e.to_string(),
    })
}

/// Walks the document once: the first repeated key of any object, the
/// value past `max_values`, or the entry of a table past its ceiling, is
/// an error.
fn check(
    member: &str,
    bytes: &[u8],
    max_values: u64,
    tables: &[Table],
) -> Result<(), ManifestError> {
    let found = RefCell::new(Found::default());
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let walked = Walk {
        found: &found,
        max_values,
        tables,
        root: true,
        table: None,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end());
    let found = found.into_inner();
    let member = member.to_string();
    match (walked, found.dup, found.over) {
        (_, Some(key), _) => Err(ManifestError::DuplicateKey { key, member }),
        (_, None, Some(Over::Values(path))) => Err(ManifestError::TooManyValues {
            member,
            at: render_path(&path),
            ceiling: max_values,
        }),
        (_, None, Some(Over::Table(t))) => Err(ManifestError::TooManyEntries {
            member,
            key: t.key,
            ceiling: t.ceiling,
        }),
        (Err(e), None, None) => Err(ManifestError::Json {
            member,
            detail: e.to_string(),
        }),
        (Ok(()), None, None) => Ok(()),
    }
}

/// What the walk found: values so far, the first repeated key, and which
/// ceiling was passed.
#[derive(Default)]
struct Found {
    values: u64,
    dup: Option<String>,
    over: Option<Over>,
}

enum Over {
    /// [`MAX_VALUES`], with the path to where it was passed (innermost
    /// first: each enclosing array or object adds its step as the error
    /// unwinds).
    Values(Vec<Step>),
    Table(Table),
}

enum Step {
    Key(String),
    Index(u64),
}

/// `var.a.shape[3]`, outermost first; `the top level` for the root.
fn render_path(inner_first: &[Step]) -> String {
    let mut out = String::new();
    for step in inner_first.iter().rev() {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    if out.is_empty() {
        out.push_str("the top level");
    }
    out
}

/// A seed and visitor that accepts any JSON, counts its values and the
/// entries of the bounded tables, and records the first key that repeats
/// inside one object.
#[derive(Clone, Copy)]
struct Walk<'s> {
    found: &'s RefCell<Found>,
    max_values: u64,
    tables: &'s [Table],
    /// The document itself, whose keys name the tables.
    root: bool,
    /// The table this value is, if it is one.
    table: Option<Table>,
}

impl Walk<'_> {
    /// Counts one value; past the ceiling, starts the path and fails.
    fn count<E: de::Error>(self) -> Result<(), E> {
        let mut f = self.found.borrow_mut();
        f.values += 1;
        if f.values > self.max_values {
            f.over = Some(Over::Values(Vec::new()));
            return Err(E::custom("too many JSON values"));
        }
        Ok(())
    }

    /// Counts the `n`th entry of this array or object against its table's
    /// ceiling, if it is a table.
    fn entry<E: de::Error>(self, n: u64) -> Result<(), E> {
        match self.table {
            Some(t) if n > t.ceiling => {
                self.found.borrow_mut().over = Some(Over::Table(t));
                Err(E::custom("too many entries"))
            }
            _ => Ok(()),
        }
    }

    /// The walk of a value inside this one (under `key` for an object's).
    fn inner(self, key: Option<&str>) -> Self {
        let table = match key {
            Some(k) if self.root => self.tables.iter().find(|t| t.key == k).copied(),
            _ => None,
        };
        Walk {
            root: false,
            table,
            ..self
        }
    }

    /// Adds this level's step to the path of a ceiling error unwinding.
    fn unwinding(self, step: impl FnOnce() -> Step) {
        if let Some(Over::Values(path)) = self.found.borrow_mut().over.as_mut() {
            path.push(step());
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.count()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.count()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.count()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.count()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.count()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.count()
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.count()?;
        let mut index = 0u64;
        loop {
            match seq.next_element_seed(self.inner(None)) {
                Ok(Some(())) => {
                    index += 1;
                    self.entry(index)?;
                }
                Ok(None) => return Ok(()),
                Err(e) => {
                    self.unwinding(|| Step::Index(index));
                    return Err(e);
                }
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.count()?;
        // Keys borrow from the member when they hold no escapes; small
        // objects (nearly all) are checked by a linear scan, larger ones by hash.
        let mut few: Vec<Cow<'de, str>> = Vec::new();
        let mut many: HashSet<Cow<'de, str>> = HashSet::new();
        let mut entries = 0u64;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            entries += 1;
            self.entry(entries)?;
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
                self.found.borrow_mut().dup = Some(key.into_owned());
                return Err(de::Error::custom("duplicate key"));
            }
            if let Err(e) = map.next_value_seed(self.inner(Some(&key))) {
                self.unwinding(|| Step::Key(key.into_owned()));
                return Err(e);
            }
        }
        Ok(())
    }
}

/// The length of a JSON array whose elements neffld does not keep: each is
/// skipped as it is read, so counting builds nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count(pub usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
        struct Counting;
        impl<'de> Visitor<'de> for Counting {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while seq.next_element::<de::IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
        }
        d.deserialize_seq(Counting)
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

/// A part of a member whose text is kept, read as `T`.
fn read<'a, T: Deserialize<'a>>(raw: &'a RawValue) -> Result<T, serde_json::Error> {
    serde_json::from_str(raw.get())
}

/// A part that must be a JSON object, read as the record `T`: an array is
/// refused rather than read field by field in order, as serde reads a
/// record from an array. The error is the detail of a message, without
/// the line and column serde_json adds: they would count from the part,
/// not from the member.
pub fn object<'a, T: Deserialize<'a>>(raw: &'a RawValue) -> Result<T, String> {
    if !raw.get().starts_with('{') {
        return Err(format!("expected an object, found {}", brief(raw)));
    }
    read(raw).map_err(|e| {
        let at = format!(" at line {} column {}", e.line(), e.column());
        let mut detail = e.to_string();
        if detail.ends_with(&at) {
            detail.truncate(detail.len() - at.len());
        }
        detail
    })
}

/// A record `T` read only from a JSON object (serde would also read it
/// from an array, field by field in order), as a map is: what is not an
/// object is "invalid type: …, expected a map".
#[derive(Debug)]
pub struct Obj<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Obj<T>, D::Error> {
        struct Objects<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Objects<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Obj)
            }
        }
        d.deserialize_map(Objects(std::marker::PhantomData))
    }
}

/// The unsigned integer `raw` is, if it is one.
pub fn as_u64(raw: &RawValue) -> Option<u64> {
    read(raw).ok()
}

/// The string `raw` is, if it is one.
pub fn as_string(raw: &RawValue) -> Option<String> {
    read(raw).ok()
}

/// The string `raw` is, or else what stands there instead ([`brief`]), for
/// the message that refuses it.
pub fn string(raw: &RawValue) -> Result<String, String> {
    as_string(raw).ok_or_else(|| brief(raw))
}

/// The list of unsigned integers `raw` is, if it is one.
pub fn u64_list(raw: &RawValue) -> Option<Vec<u64>> {
    read(raw).ok()
}

/// The elements of the array `raw` is, each as its text; `None` if it is
/// not an array.
pub fn elements(raw: &RawValue) -> Option<Vec<&RawValue>> {
    read(raw).ok()
}

/// How many entries an array or an object has, counted as they are
/// skipped, or that it is neither.
enum Entries {
    Array(usize),
    Object(usize),
    Neither,
}

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Entries, D::Error> {
        d.deserialize_any(EntriesVisitor)
    }
}

struct EntriesVisitor;

impl<'de> Visitor<'de> for EntriesVisitor {
    type Value = Entries;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Entries, E> {
        Ok(Entries::Neither)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Entries, E> {
        Ok(Entries::Neither)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Entries, E> {
        Ok(Entries::Neither)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Entries, E> {
        Ok(Entries::Neither)
    }
    fn visit_str<E>(self, _: &str) -> Result<Entries, E> {
        Ok(Entries::Neither)
    }
    fn visit_unit<E>(self) -> Result<Entries, E> {
        Ok(Entries::Neither)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Entries, A::Error> {
        let mut n = 0;
        while seq.next_element::<de::IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok(Entries::Array(n))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
        let mut n = 0;
        while map
            .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
            .is_some()
        {
            n += 1;
        }
        Ok(Entries::Object(n))
    }
}

/// The length of the array `raw` is, if it is one.
pub fn array_len(raw: &RawValue) -> Option<usize> {
    match read(raw) {
        Ok(Entries::Array(n)) => Some(n),
        _ => None,
    }
}

/// How many keys the object `raw` is has, if it is one.
pub fn object_len(raw: &RawValue) -> Option<usize> {
    match read(raw) {
        Ok(Entries::Object(n)) => Some(n),
        _ => None,
    }
}

/// Where the part `raw` starts in `member`, the text it was read from.
///
/// # Panics
/// When `raw` was read from another text: a caller's mistake.
pub fn offset_in(member: &[u8], raw: &RawValue) -> usize {
    let at = (raw.get().as_ptr() as usize).wrapping_sub(member.as_ptr() as usize);
    assert!(
        at + raw.get().len() <= member.len(),
        "a part read from another member"
    );
    at
}

/// The first element of an array and how many it has: every element is
/// read as `T` (so each must be one), and all but the first dropped as they
/// are read, so a long array keeps nothing.
#[derive(Debug)]
pub struct First<T> {
    pub first: Option<T>,
    pub len: usize,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for First<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<First<T>, D::Error> {
        struct Firsts<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Firsts<T> {
            type Value = First<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<First<T>, A::Error> {
                let first = seq.next_element::<T>()?;
                let mut len = usize::from(first.is_some());
                while seq.next_element::<T>()?.is_some() {
                    len += 1;
                }
                Ok(First { first, len })
            }
        }
        d.deserialize_seq(Firsts(std::marker::PhantomData))
    }
}

/// The longest rendering [`brief`] gives before it cuts.
const BRIEF: usize = 60;

/// A short rendering of a part for "found …" in messages: its text without
/// the whitespace between tokens, cut at 60 characters. Only what is shown
/// is read.
pub fn brief(raw: &RawValue) -> String {
    let mut out = String::new();
    let mut shown = 0;
    let (mut in_string, mut escaped) = (false, false);
    for c in raw.get().chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c.is_whitespace() {
            continue;
        } else if c == '"' {
            in_string = true;
        }
        if shown == BRIEF {
            let cut = out.char_indices().nth(BRIEF - 3).map_or(out.len(), |(i, _)| i);
            out.truncate(cut);
            out.push_str("...");
            return out;
        }
        out.push(c);
        shown += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_plain(member: &str, bytes: &[u8]) -> Result<(), ManifestError> {
        check(member, bytes, MAX_VALUES, &[])
    }

    #[test]
    fn duplicate_keys_are_found_at_any_depth() {
        assert!(check_plain("m", br#"{"a":1,"b":{"c":[{"d":1}]}}"#).is_ok());
        let e = check_plain("m.json", br#"{"a":1,"b":[{"c":1,"c":2}]}"#).unwrap_err();
        assert_eq!(e.to_string(), "duplicate key c in m.json");
        let e = check_plain("m", br#"{"a":1,"a":1}"#).unwrap_err();
        assert!(matches!(e, ManifestError::DuplicateKey { ref key, .. } if key == "a"));
        // Escaped spellings of the same key are the same key.
        assert!(check_plain("m", br#"{"a":1,"\u0061":2}"#).is_err());
    }

    #[test]
    fn invalid_json_and_utf8_are_json_errors() {
        assert!(matches!(
            check_plain("m", b"{\"a\":"),
            Err(ManifestError::Json { .. })
        ));
        assert!(matches!(
            check_plain("m", b"{\"a\":\"\xff\"}"),
            Err(ManifestError::Json { .. })
        ));
        assert!(matches!(
            check_plain("m", b"{} x"),
            Err(ManifestError::Json { .. })
        ));
    }

    /// Every value counts, at any depth, and the error says where the walk
    /// was when the count passed the ceiling.
    #[test]
    fn values_past_the_ceiling_are_refused_naming_where() {
        let doc = br#"{"a":1,"b":{"c":[[],[0,1]]}}"#;
        // 1 root + a + b + c + [] + [0,1] + 0 + 1 = 8 values.
        assert!(check("m", doc, 8, &[]).is_ok());
        let e = check("m.json", doc, 7, &[]).unwrap_err();
        assert_eq!(
            e,
            ManifestError::TooManyValues {
                member: "m.json".into(),
                at: "b.c[1][1]".into(),
                ceiling: 7,
            }
        );
        assert!(e.to_string().starts_with("m.json holds more than 7 JSON values"), "{e}");
        assert_eq!(e.status(), crate::NrtStatus::Invalid);
        let e = check("m", b"[]", 0, &[]).unwrap_err();
        assert!(matches!(e, ManifestError::TooManyValues { ref at, .. } if at == "the top level"));
        // A repeated key found first is still a repeated key.
        let e = check("m", br#"{"a":1,"a":[0,0,0,0]}"#, 3, &[]).unwrap_err();
        assert!(matches!(e, ManifestError::DuplicateKey { .. }), "{e}");
    }

    #[test]
    fn a_count_is_the_length_of_an_array_and_nothing_else() {
        let c: Count = serde_json::from_str(r#"[0, {"a": [1, 2]}, "x"]"#).unwrap();
        assert_eq!(c, Count(3));
        assert!(serde_json::from_str::<Count>(r#"{"a": 1}"#).is_err());
    }

    /// A table's ceiling counts the entries of the top-level object or
    /// array under its key, and nothing of the same name deeper down.
    #[test]
    fn a_table_past_its_ceiling_is_refused_by_name() {
        let tables = [Table {
            key: "var",
            ceiling: 2,
        }];
        let ok = br#"{"var":{"a":{"var":[1,2,3]},"b":{}},"x":{"var":[1,2,3]}}"#;
        assert!(check("m", ok, MAX_VALUES, &tables).is_ok());
        for over in [&br#"{"var":{"a":1,"b":2,"c":3}}"#[..], br#"{"var":[1,2,3]}"#] {
            let e = check("d.json", over, MAX_VALUES, &tables).unwrap_err();
            assert_eq!(
                e,
                ManifestError::TooManyEntries {
                    member: "d.json".into(),
                    key: "var",
                    ceiling: 2
                }
            );
            assert!(e.to_string().contains("more than 2"), "{e}");
        }
    }

    fn raw(text: &str) -> &RawValue {
        serde_json::from_str(text).expect("JSON")
    }

    /// A part is shown as written, without the whitespace between tokens,
    /// and cut at 60 characters (not bytes).
    #[test]
    fn a_brief_is_the_text_without_spacing_cut_at_sixty_characters() {
        assert_eq!(brief(raw(r#"{ "b" : 1e3,  "a" : [ 1 , "x  y" ] }"#)), r#"{"b":1e3,"a":[1,"x  y"]}"#);
        assert_eq!(brief(raw(r#""a \" }  b""#)), r#""a \" }  b""#);
        let long = format!("[{}]", vec!["\"é\""; 40].join(", "));
        let shown = brief(raw(&long));
        assert_eq!(shown.chars().count(), 60, "{shown}");
        assert!(shown.starts_with("[\"é\",\"é\"") && shown.ends_with("..."), "{shown}");
        assert_eq!(brief(raw(&format!("[{}]", "1,".repeat(28) + "1"))).len(), 59);
    }

    /// A record is read from an object only, and its error reads as serde's
    /// without a line and column that would count from the part.
    #[test]
    fn records_are_read_from_objects_only() {
        #[derive(Debug, Deserialize)]
        struct R {
            #[allow(dead_code)]
            a: Option<u64>,
        }
        assert!(object::<R>(raw(r#"{"a":1}"#)).is_ok());
        assert_eq!(object::<R>(raw("[1]")).unwrap_err(), "expected an object, found [1]");
        assert_eq!(
            object::<R>(raw(r#"{"a":"x"}"#)).unwrap_err(),
            r#"invalid type: string "x", expected u64"#
        );
        let e = serde_json::from_str::<Obj<R>>("[1]").unwrap_err().to_string();
        assert!(e.starts_with("invalid type: sequence, expected a map"), "{e}");
        assert!(serde_json::from_str::<Obj<R>>(r#"{"a":2}"#).is_ok());
    }

    /// `First` keeps the first element, counts them all and reads each as
    /// its type.
    #[test]
    fn first_keeps_one_element_and_counts_all() {
        let f: First<u64> = serde_json::from_str("[7,8,9]").unwrap();
        assert_eq!((f.first, f.len), (Some(7), 3));
        let f: First<u64> = serde_json::from_str("[]").unwrap();
        assert_eq!((f.first, f.len), (None, 0));
        assert!(serde_json::from_str::<First<u64>>(r#"[7,"x"]"#).is_err());
        assert_eq!(array_len(raw("[[1,2],3]")), Some(2));
        assert_eq!(object_len(raw(r#"{"a":[1,2],"b":3}"#)), Some(2));
        assert_eq!((array_len(raw("{}")), object_len(raw("[]"))), (None, None));
    }
}
