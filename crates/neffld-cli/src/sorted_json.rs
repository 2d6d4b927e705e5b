//! `--json` text: pretty JSON with every object's keys in sorted order, the
//! bytes `serde_json::to_string_pretty` writes for the document's
//! `serde_json::Value`, without building that tree. The tree of a plan of
//! 100,000 loads took five times the memory of its 250 MB of text; here an
//! object's entries are rendered one by one into text (an array's elements
//! straight into their parent's), and only an object waits for all its
//! entries to sort them.
//!
//! What the tree does, this does: keys sort as strings (byte order), a key
//! given twice keeps its last value, map keys that are numbers or booleans
//! become their text, non-finite floats are `null`, and an enum is its
//! variant's name or an object of one entry named for it.

use std::fmt::Display;

use serde::ser::{self, Serialize};

/// The document as `--json` prints it (without the final newline), as
/// UTF-8 bytes (only JSON's own text and serde_json's escaped strings are
/// written), for a caller that writes them out as they are.
pub fn to_vec(doc: &impl Serialize) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    doc.serialize(Writer {
        out: &mut out,
        depth: 0,
    })?;
    Ok(out)
}

/// [`to_vec`] as text.
pub fn to_string(doc: &impl Serialize) -> Result<String, Error> {
    String::from_utf8(to_vec(doc)?).map_err(|e| Error(e.to_string()))
}

/// Why a document could not be written.
#[derive(Debug)]
pub struct Error(String);

impl Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

fn indent(out: &mut Vec<u8>, depth: usize) {
    out.extend(std::iter::repeat_n(b' ', 2 * depth));
}

/// A string as serde_json escapes it.
fn quoted(out: &mut Vec<u8>, s: &str) -> Result<(), Error> {
    serde_json::to_writer(&mut *out, s).map_err(|e| Error(e.to_string()))
}

/// Writes one value at `depth` (its first line already placed).
struct Writer<'o> {
    out: &'o mut Vec<u8>,
    depth: usize,
}

impl<'o> Writer<'o> {
    fn raw(self, text: &str) -> Result<(), Error> {
        self.out.extend_from_slice(text.as_bytes());
        Ok(())
    }

    fn seq(self) -> Seq<'o> {
        Seq {
            out: self.out,
            depth: self.depth,
            empty: true,
        }
    }

    fn object(self) -> Object<'o> {
        Object {
            out: self.out,
            depth: self.depth,
            entries: Vec::new(),
            key: None,
            variant: None,
        }
    }

    /// An object of one entry, `variant`, whose value is what follows.
    fn variant(self, variant: &'static str) -> Object<'o> {
        let mut object = self.object();
        object.variant = Some(variant);
        object
    }
}

/// An array being written: its elements go straight out.
struct Seq<'o> {
    out: &'o mut Vec<u8>,
    depth: usize,
    empty: bool,
}

impl Seq<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.out
            .extend_from_slice(if self.empty { b"[\n" } else { b",\n" });
        self.empty = false;
        indent(self.out, self.depth + 1);
        value.serialize(Writer {
            out: self.out,
            depth: self.depth + 1,
        })
    }

    fn finish(self) -> Result<(), Error> {
        if self.empty {
            self.out.extend_from_slice(b"[]");
        } else {
            self.out.push(b'\n');
            indent(self.out, self.depth);
            self.out.push(b']');
        }
        Ok(())
    }
}

/// An object being gathered: each entry's value rendered, sorted at the
/// end. `variant`: the object is `{variant: <this>}` (an enum's tuple or
/// struct variant), the entries being the inner value's.
struct Object<'o> {
    out: &'o mut Vec<u8>,
    depth: usize,
    entries: Vec<(String, Vec<u8>)>,
    key: Option<String>,
    variant: Option<&'static str>,
}

impl Object<'_> {
    /// Depth of the entries' values.
    fn inner(&self) -> usize {
        self.depth + 1 + usize::from(self.variant.is_some())
    }

    fn entry<T: Serialize + ?Sized>(&mut self, key: String, value: &T) -> Result<(), Error> {
        let mut text = Vec::new();
        value.serialize(Writer {
            out: &mut text,
            depth: self.inner(),
        })?;
        self.entries.push((key, text));
        Ok(())
    }

    fn write_object(out: &mut Vec<u8>, depth: usize, mut entries: Vec<(String, Vec<u8>)>) {
        // Sorted as the tree's map sorts; of a key given twice, the last.
        entries.reverse();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries.dedup_by(|later, first| later.0 == first.0);
        if entries.is_empty() {
            out.extend_from_slice(b"{}");
            return;
        }
        // Each entry's text is let go once copied, and a buffer of its own
        // (the document's, an entry's) gets room for it all at once: the
        // document's text is held about once, not twice.
        if out.is_empty() {
            let overhead = 2 * depth + 8;
            out.reserve_exact(
                entries
                    .iter()
                    .map(|(k, t)| k.len() + t.len() + overhead)
                    .sum::<usize>()
                    + 2 * depth
                    + 2,
            );
        }
        out.extend_from_slice(b"{\n");
        for (i, (key, text)) in entries.into_iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b",\n");
            }
            indent(out, depth + 1);
            // Keys are strings; they cannot fail to quote.
            let _ = quoted(out, &key);
            out.extend_from_slice(b": ");
            out.extend_from_slice(&text);
        }
        out.push(b'\n');
        indent(out, depth);
        out.push(b'}');
    }

    fn finish(self) -> Result<(), Error> {
        match self.variant {
            None => Self::write_object(self.out, self.depth, self.entries),
            Some(variant) => {
                let mut inner = Vec::new();
                Self::write_object(&mut inner, self.depth + 1, self.entries);
                Self::write_object(self.out, self.depth, vec![(variant.to_string(), inner)]);
            }
        }
        Ok(())
    }
}

/// An array that is an enum's tuple variant: `{variant: [..]}`.
struct VariantSeq<'o> {
    out: &'o mut Vec<u8>,
    depth: usize,
    variant: &'static str,
    inner: Vec<u8>,
    seq_empty: bool,
}

impl VariantSeq<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let mut seq = Seq {
            out: &mut self.inner,
            depth: self.depth + 1,
            empty: self.seq_empty,
        };
        seq.element(value)?;
        self.seq_empty = false;
        Ok(())
    }

    fn finish(mut self) -> Result<(), Error> {
        Seq {
            out: &mut self.inner,
            depth: self.depth + 1,
            empty: self.seq_empty,
        }
        .finish()?;
        Object::write_object(
            self.out,
            self.depth,
            vec![(self.variant.to_string(), self.inner)],
        );
        Ok(())
    }
}

impl<'o> ser::Serializer for Writer<'o> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Seq<'o>;
    type SerializeTuple = Seq<'o>;
    type SerializeTupleStruct = Seq<'o>;
    type SerializeTupleVariant = VariantSeq<'o>;
    type SerializeMap = Object<'o>;
    type SerializeStruct = Object<'o>;
    type SerializeStructVariant = Object<'o>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.raw(if v { "true" } else { "false" })
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.raw(&v.to_string())
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        match i64::try_from(v) {
            Ok(v) => self.serialize_i64(v),
            Err(_) => self.serialize_u128(u128::try_from(v).map_err(ser::Error::custom)?),
        }
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.raw(&v.to_string())
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        // As the tree: a number only where it fits 64 bits.
        let v = u64::try_from(v).map_err(|_| Error("number out of range".into()))?;
        self.serialize_u64(v)
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        let text = serde_json::to_string(&v).map_err(|e| Error(e.to_string()))?;
        self.raw(&text)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        quoted(self.out, v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        let mut seq = self.seq();
        for b in v {
            seq.element(b)?;
        }
        seq.finish()
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.raw("null")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.raw("null")
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        let mut object = self.object();
        object.entry(variant.to_string(), value)?;
        object.finish()
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Seq<'o>, Error> {
        Ok(self.seq())
    }
    fn serialize_tuple(self, _len: usize) -> Result<Seq<'o>, Error> {
        Ok(self.seq())
    }
    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Seq<'o>, Error> {
        Ok(self.seq())
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<VariantSeq<'o>, Error> {
        Ok(VariantSeq {
            out: self.out,
            depth: self.depth,
            variant,
            inner: Vec::new(),
            seq_empty: true,
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Object<'o>, Error> {
        Ok(self.object())
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Object<'o>, Error> {
        Ok(self.object())
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Object<'o>, Error> {
        Ok(self.variant(variant))
    }
}

/// serde's element-by-element traits, each adding an element.
macro_rules! elements {
    ($($tr:ident for $ty:ident via $method:ident),* $(,)?) => {
        $(impl ser::$tr for $ty<'_> {
            type Ok = ();
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                self.element(value)
            }
            fn end(self) -> Result<(), Error> {
                self.finish()
            }
        })*
    };
}

elements! {
    SerializeSeq for Seq via serialize_element,
    SerializeTuple for Seq via serialize_element,
    SerializeTupleStruct for Seq via serialize_field,
    SerializeTupleVariant for VariantSeq via serialize_field,
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = Some(key.serialize(KeyText)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self
            .key
            .take()
            .ok_or_else(|| Error("a map value without its key".into()))?;
        self.entry(key, value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

/// serde's field-by-field traits, each adding an entry.
macro_rules! fields {
    ($($tr:ident),* $(,)?) => {
        $(impl ser::$tr for Object<'_> {
            type Ok = ();
            type Error = Error;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Error> {
                self.entry(key.to_string(), value)
            }
            fn end(self) -> Result<(), Error> {
                self.finish()
            }
        })*
    };
}

fields!(SerializeStruct, SerializeStructVariant);

/// A map key as the tree keeps it: a string; a number or a boolean as its
/// text; a unit variant as its name; anything else refused.
struct KeyText;

/// [`KeyText`]'s methods for the values that are keys as their text.
macro_rules! as_text {
    ($($method:ident: $ty:ty),* $(,)?) => {
        $(fn $method(self, v: $ty) -> Result<String, Error> {
            Ok(v.to_string())
        })*
    };
}

impl KeyText {
    fn refused<T>() -> Result<T, Error> {
        Err(Error("key must be a string".into()))
    }
}

impl ser::Serializer for KeyText {
    type Ok = String;
    type Error = Error;
    type SerializeSeq = ser::Impossible<String, Error>;
    type SerializeTuple = ser::Impossible<String, Error>;
    type SerializeTupleStruct = ser::Impossible<String, Error>;
    type SerializeTupleVariant = ser::Impossible<String, Error>;
    type SerializeMap = ser::Impossible<String, Error>;
    type SerializeStruct = ser::Impossible<String, Error>;
    type SerializeStructVariant = ser::Impossible<String, Error>;

    as_text! {
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_i128: i128,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_u128: u128,
        serialize_char: char,
        serialize_str: &str,
    }
    fn serialize_f32(self, _v: f32) -> Result<String, Error> {
        Self::refused()
    }
    fn serialize_f64(self, _v: f64) -> Result<String, Error> {
        Self::refused()
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result<String, Error> {
        Self::refused()
    }
    fn serialize_none(self) -> Result<String, Error> {
        Self::refused()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<String, Error> {
        Self::refused()
    }
    fn serialize_unit(self) -> Result<String, Error> {
        Self::refused()
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<String, Error> {
        Self::refused()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<String, Error> {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<String, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<String, Error> {
        Self::refused()
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Self::refused()
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
        Self::refused()
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Self::refused()
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Self::refused()
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Self::refused()
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Error> {
        Self::refused()
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Self::refused()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use std::collections::{BTreeMap, HashMap};

    fn via_tree(doc: &impl Serialize) -> String {
        serde_json::to_string_pretty(&serde_json::to_value(doc).unwrap()).unwrap()
    }

    #[derive(Serialize)]
    enum Kind {
        Unit,
        New(u32),
        Pair(i8, String),
        Shaped { z: u8, a: Option<bool> },
        Empty {},
    }

    #[derive(Serialize)]
    struct Inner {
        zeta: Vec<u64>,
        alpha: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
        nothing: (),
        empty: Vec<u8>,
        empty_map: BTreeMap<String, u8>,
    }

    #[derive(Serialize)]
    struct Flat {
        middle: &'static str,
        alpha: i64,
    }

    #[derive(Serialize)]
    struct Doc {
        z_last: f64,
        nan: f64,
        #[serde(flatten)]
        flat: Flat,
        inner: Vec<Inner>,
        kinds: Vec<Kind>,
        by_number: HashMap<u32, &'static str>,
        by_text: BTreeMap<String, Vec<i32>>,
        text: String,
        unicode: char,
        bytes: serde_bytes_like::Bytes,
        big: u128,
        negative: i128,
        tuple: (u8, &'static str, bool),
    }

    mod serde_bytes_like {
        /// Bytes serialised as bytes (not as a sequence of numbers).
        pub struct Bytes(pub Vec<u8>);
        impl serde::Serialize for Bytes {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(&self.0)
            }
        }
    }

    #[test]
    fn every_shape_prints_as_the_tree_prints_it() {
        let doc = Doc {
            z_last: 1.5e-7,
            nan: f64::NAN,
            flat: Flat {
                middle: "m",
                alpha: -3,
            },
            inner: vec![
                Inner {
                    zeta: vec![u64::MAX, 0],
                    alpha: None,
                    skipped: None,
                    nothing: (),
                    empty: vec![],
                    empty_map: BTreeMap::new(),
                },
                Inner {
                    zeta: vec![],
                    alpha: Some("quote \" and \\ and \n and \u{1}".into()),
                    skipped: Some(7),
                    nothing: (),
                    empty: vec![1],
                    empty_map: [("k".to_string(), 1)].into(),
                },
            ],
            kinds: vec![
                Kind::Unit,
                Kind::New(4),
                Kind::Pair(-1, "x".into()),
                Kind::Shaped { z: 1, a: None },
                Kind::Empty {},
            ],
            by_number: [(10, "ten"), (9, "nine"), (100, "hundred")].into(),
            by_text: [("b".into(), vec![]), ("a".into(), vec![-1, 2])].into(),
            text: "naïve ☃".into(),
            unicode: 'é',
            bytes: serde_bytes_like::Bytes(vec![0, 255]),
            big: u128::from(u64::MAX),
            negative: -5,
            tuple: (1, "two", true),
        };
        assert_eq!(to_string(&doc).unwrap(), via_tree(&doc));
        for empty in [
            serde_json::json!({}),
            serde_json::json!([]),
            serde_json::json!(null),
        ] {
            assert_eq!(to_string(&empty).unwrap(), via_tree(&empty));
        }
    }

    #[test]
    fn a_key_given_twice_keeps_its_last_value_as_the_tree_does() {
        #[derive(Serialize)]
        struct A {
            k: u8,
        }
        #[derive(Serialize)]
        struct Twice {
            #[serde(flatten)]
            first: A,
            #[serde(flatten)]
            second: BTreeMap<&'static str, u8>,
        }
        let doc = Twice {
            first: A { k: 1 },
            second: [("k", 2)].into(),
        };
        assert_eq!(to_string(&doc).unwrap(), via_tree(&doc));
    }

    #[test]
    fn what_the_tree_refuses_is_refused() {
        let bad: BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
        assert!(to_string(&bad).is_err());
        assert!(serde_json::to_value(&bad).is_err());
        assert!(to_string(&(u128::from(u64::MAX) + 1)).is_err());
    }
}
