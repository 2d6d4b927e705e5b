//! The protobuf wire format, both directions, as far as captures use it:
//! varints and the wire types 0 (varint), 1 (fixed 64), 2 (length-delimited)
//! and 5 (fixed 32). No schema is published, so messages are walked field by
//! field and the caller picks the numbers it knows; everything else is skipped.
//!
//! Reading never panics and never allocates: every length is checked against
//! what is left before it is used, and a varint longer than ten bytes (or one
//! whose tenth byte overflows 64 bits) is an error, not a wrap.

use thiserror::Error;

/// Why a message could not be walked. Offsets are absolute (from the start
/// of the buffer the outermost walk was given a base for).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum WireError {
    /// The buffer ends inside a varint.
    #[error("truncated varint at offset {at:#x}")]
    TruncatedVarint {
        /// Where the varint starts.
        at: usize,
    },
    /// A varint of more than ten bytes.
    #[error("varint at offset {at:#x} is longer than 64 bits")]
    VarintOverflow {
        /// Where the varint starts.
        at: usize,
    },
    /// A field numbered 0, which protobuf does not allow.
    #[error("field number 0 at offset {at:#x}")]
    ZeroField {
        /// Where the field's key starts.
        at: usize,
    },
    /// A wire type protobuf does not define (or a group).
    #[error("field {field} at offset {at:#x} has wire type {wire_type}, not 0, 1, 2 or 5")]
    BadWireType {
        /// Where the field's key starts.
        at: usize,
        /// The field number.
        field: u64,
        /// The wire type found.
        wire_type: u8,
    },
    /// A field whose length runs past the message.
    #[error("field {field} at offset {at:#x} needs {need} bytes, {left} left")]
    Overrun {
        /// Where the field's key starts.
        at: usize,
        /// The field number.
        field: u64,
        /// Bytes it declares.
        need: u64,
        /// Bytes left in the message.
        left: usize,
    },
}

/// One field's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

impl Value<'_> {
    /// The wire type this value is written with.
    pub fn wire_type(&self) -> u8 {
        match self {
            Value::Varint(_) => 0,
            Value::Fixed64(_) => 1,
            Value::Bytes(_) => 2,
            Value::Fixed32(_) => 5,
        }
    }
}

/// One field of a message, with the absolute offsets of its key and of its
/// payload (past the key, and past the length of a length-delimited field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    pub number: u64,
    pub value: Value<'a>,
    pub at: usize,
    pub payload_at: usize,
}

impl<'a> Field<'a> {
    /// The payload of a length-delimited field and its absolute offset.
    pub fn bytes(&self) -> Option<(&'a [u8], usize)> {
        match self.value {
            Value::Bytes(b) => Some((b, self.payload_at)),
            _ => None,
        }
    }

    pub fn varint(&self) -> Option<u64> {
        match self.value {
            Value::Varint(v) => Some(v),
            _ => None,
        }
    }
}

/// The fields of one message, in order. Stops (fused) after the first error.
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    failed: bool,
}

/// Walks `buf`, reporting offsets as `base + position in buf`.
pub fn fields(buf: &[u8], base: usize) -> Fields<'_> {
    Fields {
        buf,
        pos: 0,
        base,
        failed: false,
    }
}

/// Reads a varint at `pos`; returns it and the position after it.
pub fn read_varint(buf: &[u8], pos: usize, base: usize) -> Result<(u64, usize), WireError> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let Some(&b) = buf.get(pos + i) else {
            return Err(WireError::TruncatedVarint { at: base + pos });
        };
        // The tenth byte may only carry the 64th bit.
        if i == 9 && b > 1 {
            return Err(WireError::VarintOverflow { at: base + pos });
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((v, pos + i + 1));
        }
    }
    Err(WireError::VarintOverflow { at: base + pos })
}

impl<'a> Fields<'a> {
    fn next_field(&mut self) -> Result<Field<'a>, WireError> {
        let at = self.base + self.pos;
        let (key, mut p) = read_varint(self.buf, self.pos, self.base)?;
        let number = key >> 3;
        let wire_type = (key & 7) as u8;
        if number == 0 {
            return Err(WireError::ZeroField { at });
        }
        let left = self.buf.len() - p;
        let mut payload_at = self.base + p;
        let overrun = |need: u64, left: usize| WireError::Overrun {
            at,
            field: number,
            need,
            left,
        };
        let value = match wire_type {
            0 => {
                let (v, q) = read_varint(self.buf, p, self.base)?;
                p = q;
                Value::Varint(v)
            }
            1 => {
                let b: [u8; 8] = self
                    .buf
                    .get(p..p + 8)
                    .and_then(|s| s.try_into().ok())
                    .ok_or(overrun(8, left))?;
                p += 8;
                Value::Fixed64(u64::from_le_bytes(b))
            }
            2 => {
                let (len, q) = read_varint(self.buf, p, self.base)?;
                let left = self.buf.len() - q;
                if len > left as u64 {
                    return Err(overrun(len, left));
                }
                let len = len as usize;
                payload_at = self.base + q;
                p = q + len;
                Value::Bytes(&self.buf[q..p])
            }
            5 => {
                let b: [u8; 4] = self
                    .buf
                    .get(p..p + 4)
                    .and_then(|s| s.try_into().ok())
                    .ok_or(overrun(4, left))?;
                p += 4;
                Value::Fixed32(u32::from_le_bytes(b))
            }
            _ => {
                return Err(WireError::BadWireType {
                    at,
                    field: number,
                    wire_type,
                })
            }
        };
        self.pos = p;
        Ok(Field {
            number,
            value,
            at,
            payload_at,
        })
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Field<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let r = self.next_field();
        self.failed = r.is_err();
        Some(r)
    }
}

/// Bytes a varint of `v` takes (the tests check the writer against it).
#[cfg(any(test, feature = "testkit"))]
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Appends `v` as a varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends one field.
pub fn put(out: &mut Vec<u8>, number: u64, value: Value<'_>) {
    put_varint(out, number << 3 | u64::from(value.wire_type()));
    match value {
        Value::Varint(v) => put_varint(out, v),
        Value::Fixed64(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::Bytes(b) => {
            put_varint(out, b.len() as u64);
            out.extend_from_slice(b);
        }
        Value::Fixed32(v) => out.extend_from_slice(&v.to_le_bytes()),
    }
}

/// Appends a varint field.
pub fn put_u64(out: &mut Vec<u8>, number: u64, v: u64) {
    put(out, number, Value::Varint(v));
}

/// Appends a length-delimited field.
pub fn put_bytes(out: &mut Vec<u8>, number: u64, b: &[u8]) {
    put(out, number, Value::Bytes(b));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(buf: &[u8]) -> Result<Vec<Field<'_>>, WireError> {
        fields(buf, 0).collect()
    }

    #[test]
    fn varints_round_trip_at_every_length() {
        for v in [0, 1, 127, 128, 300, u32::MAX as u64, 1 << 56, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), varint_len(v));
            assert_eq!(read_varint(&b, 0, 0), Ok((v, b.len())));
        }
    }

    #[test]
    fn each_wire_type_round_trips() {
        let mut b = Vec::new();
        put(&mut b, 1, Value::Varint(150));
        put(&mut b, 2, Value::Fixed64(0x0102030405060708));
        put(&mut b, 3, Value::Bytes(b"abc"));
        put(&mut b, 536_870_911, Value::Fixed32(7));
        let f = all(&b).unwrap();
        let got: Vec<(u64, Value)> = f.iter().map(|f| (f.number, f.value)).collect();
        assert_eq!(
            got,
            vec![
                (1, Value::Varint(150)),
                (2, Value::Fixed64(0x0102030405060708)),
                (3, Value::Bytes(b"abc")),
                (536_870_911, Value::Fixed32(7)),
            ]
        );
        // The payload offset of the bytes field: key at 12, length at 13.
        assert_eq!(f[2].at, 12);
        assert_eq!(f[2].bytes().unwrap().1, 14);
    }

    #[test]
    fn known_encoding_of_150() {
        // The protobuf documentation's example: field 1, varint 150.
        assert_eq!(all(&[0x08, 0x96, 0x01]).unwrap()[0].varint(), Some(150));
    }

    #[test]
    fn truncated_varints_are_errors() {
        assert_eq!(
            read_varint(&[0x80, 0x80], 0, 0x80),
            Err(WireError::TruncatedVarint { at: 0x80 })
        );
        assert_eq!(
            all(&[0x08, 0xff]),
            Err(WireError::TruncatedVarint { at: 1 })
        );
        assert_eq!(
            read_varint(&[], 0, 0),
            Err(WireError::TruncatedVarint { at: 0 })
        );
    }

    #[test]
    fn overlong_varints_are_errors() {
        let eleven = [0xffu8; 11];
        assert_eq!(
            read_varint(&eleven, 0, 0),
            Err(WireError::VarintOverflow { at: 0 })
        );
        // Ten bytes whose last carries more than bit 63.
        let mut ten = [0xffu8; 10];
        ten[9] = 0x02;
        assert_eq!(
            read_varint(&ten, 0, 0),
            Err(WireError::VarintOverflow { at: 0 })
        );
        ten[9] = 0x01;
        assert_eq!(read_varint(&ten, 0, 0), Ok((u64::MAX, 10)));
    }

    #[test]
    fn lengths_past_the_end_are_errors() {
        // Field 1, bytes, claims 5, has 2.
        assert_eq!(
            all(&[0x0a, 0x05, 1, 2]),
            Err(WireError::Overrun {
                at: 0,
                field: 1,
                need: 5,
                left: 2
            })
        );
        // A length near u64::MAX must not wrap.
        let mut b = vec![0x0a];
        put_varint(&mut b, u64::MAX);
        assert!(matches!(all(&b), Err(WireError::Overrun { .. })));
        // Fixed widths short.
        assert!(matches!(
            all(&[0x09, 1, 2, 3]),
            Err(WireError::Overrun { need: 8, .. })
        ));
        assert!(matches!(
            all(&[0x0d, 1]),
            Err(WireError::Overrun { need: 4, .. })
        ));
    }

    #[test]
    fn groups_and_zero_fields_are_errors() {
        assert_eq!(
            all(&[0x0b]),
            Err(WireError::BadWireType {
                at: 0,
                field: 1,
                wire_type: 3
            })
        );
        assert!(matches!(
            all(&[0x0f]),
            Err(WireError::BadWireType { wire_type: 7, .. })
        ));
        assert_eq!(all(&[0x00, 0x00]), Err(WireError::ZeroField { at: 0 }));
    }

    #[test]
    fn walk_stops_after_the_first_error() {
        let mut it = fields(&[0x08, 0x01, 0x0b, 0x08, 0x01], 0);
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().unwrap().is_err());
        assert!(it.next().is_none());
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A cheap sweep over every 1- and 2-byte message and some 3-byte ones.
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                let _ = all(&[a, b]);
                let _ = all(&[a, b, 0xff]);
                let _ = all(&[a]);
            }
        }
    }
}
