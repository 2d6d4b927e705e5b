//! The decoded payload's tar, walked in place: each member a range of the
//! one buffer. The dialects real producers write are read (ustar with its
//! prefix, pax and GNU long names and sizes, base-256 numbers); links,
//! devices and fifos become empty members that nothing follows.

use std::ops::Range;

use super::ContainerError;

/// Members whose name ends with this are dropped during the walk (the
/// reference runtime never keeps them).
pub const DROPPED_SUFFIX: &str = "wavegraph-bin.json";

const BLOCK: usize = 512;

/// What kind of tar entry a member came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberKind {
    /// A regular file: the only kind with a body.
    Regular,
    /// Links, devices, fifos: stored as empty members, never followed.
    Special(u8),
}

impl MemberKind {
    /// What the entry is, for a message: `None` for a regular file.
    pub fn special_name(self) -> Option<&'static str> {
        match self {
            MemberKind::Regular => None,
            MemberKind::Special(b'1') => Some("a hard link"),
            MemberKind::Special(b'2') => Some("a symbolic link"),
            MemberKind::Special(b'3') => Some("a character device"),
            MemberKind::Special(b'4') => Some("a block device"),
            MemberKind::Special(b'6') => Some("a FIFO"),
            MemberKind::Special(_) => Some("a special entry"),
        }
    }
}

/// One archive member: its name and where its bytes are in the buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The name as text: exact when the tar's bytes are UTF-8 (every name a
    /// manifest can refer to is), else with U+FFFD for the bytes that are
    /// not; [`Member::name_bytes`] keeps them.
    pub name: String,
    /// The tar's bytes, when they are not UTF-8.
    pub raw_name: Option<Box<[u8]>>,
    /// Byte range of the body inside the decoded buffer.
    pub range: Range<usize>,
    /// Offset of the member's tar header in the decoded buffer.
    pub header_offset: usize,
    /// What kind of entry it was.
    pub kind: MemberKind,
}

impl Member {
    /// The name exactly as the tar holds it.
    pub fn name_bytes(&self) -> &[u8] {
        self.raw_name.as_deref().unwrap_or(self.name.as_bytes())
    }
}

pub(super) struct Walk {
    pub members: Vec<Member>,
    pub warnings: Vec<String>,
}

/// Overrides carried by pax or GNU metadata entries for the next entry.
#[derive(Default, Clone)]
struct Overrides {
    path: Option<Vec<u8>>,
    size: Option<u64>,
}

pub(super) fn walk_tar(data: &[u8], max_members: u64) -> Result<Walk, ContainerError> {
    let mut members = Vec::new();
    let mut warnings = Vec::new();
    let mut global = Overrides::default();
    let mut local = Overrides::default();
    let mut pos = 0usize;
    let mut entries = 0u64;
    loop {
        if pos == data.len() {
            if pos > 0 {
                warnings.push("tar archive has no end-of-archive marker".to_string());
            }
            break;
        }
        let Some(block) = data.get(pos..pos + BLOCK) else {
            return Err(ContainerError::TarTruncated {
                offset: pos as u64,
                detail: format!("a partial header of {} bytes", data.len() - pos),
            });
        };
        if block.iter().all(|&b| b == 0) {
            break;
        }
        entries += 1;
        if entries > max_members {
            return Err(ContainerError::TooManyMembers {
                limit: max_members,
                offset: pos as u64,
            });
        }
        let header: &[u8; BLOCK] = block.try_into().expect("block length");
        verify_checksum(header, pos)?;
        let typeflag = header[156];
        let header_size = numeric(&header[124..136], pos, "size")?;
        let size = local.size.or(global.size).unwrap_or(header_size);
        let body_start = pos + BLOCK;
        let body_end = usize::try_from(size)
            .ok()
            .and_then(|s| body_start.checked_add(s))
            .filter(|&e| e <= data.len());
        let name_for_error =
            || String::from_utf8_lossy(&entry_name(header, &local, &global)).into_owned();
        let Some(body_end) = body_end else {
            return Err(ContainerError::MemberPastEnd {
                name: name_for_error(),
                offset: pos as u64,
                size,
                available: (data.len() - body_start.min(data.len())) as u64,
            });
        };
        let body = &data[body_start..body_end];
        let next = body_start + padded(body_end - body_start);
        match typeflag {
            b'x' => local = merge_pax(local, body, pos)?,
            b'g' => global = merge_pax(global, body, pos)?,
            b'L' => local.path = Some(c_string(body).to_vec()),
            b'K' => {} // GNU long link name: links are never followed.
            b'5' => local = Overrides::default(),
            b'S' => {
                return Err(ContainerError::Unsupported {
                    name: name_for_error(),
                    offset: pos as u64,
                    what: "GNU sparse member".into(),
                })
            }
            _ => {
                let raw = entry_name(header, &local, &global);
                local = Overrides::default();
                let bytes = raw.strip_prefix(b"./").unwrap_or(&raw);
                // A v7 regular file whose name ends in '/' is a directory.
                if bytes.ends_with(b"/") && matches!(typeflag, b'0' | 0) {
                    pos = next;
                    continue;
                }
                if bytes.is_empty() {
                    return Err(ContainerError::EmptyMemberName { offset: pos as u64 });
                }
                let (name, raw_name) = match std::str::from_utf8(bytes) {
                    Ok(s) => (s.to_string(), None),
                    Err(_) => (
                        String::from_utf8_lossy(bytes).into_owned(),
                        Some(bytes.into()),
                    ),
                };
                if !name.ends_with(DROPPED_SUFFIX) {
                    let regular =
                        matches!(typeflag, b'0' | 0 | b'7') || !is_known_special(typeflag);
                    let (kind, range) = if regular {
                        (MemberKind::Regular, body_start..body_end)
                    } else {
                        (MemberKind::Special(typeflag), body_start..body_start)
                    };
                    members.push(Member {
                        name,
                        raw_name,
                        range,
                        header_offset: pos,
                        kind,
                    });
                }
            }
        }
        pos = next.min(data.len());
    }
    Ok(Walk { members, warnings })
}

/// POSIX: an unknown typeflag is read as a regular file.
fn is_known_special(t: u8) -> bool {
    matches!(t, b'1' | b'2' | b'3' | b'4' | b'6')
}

fn padded(n: usize) -> usize {
    n.div_ceil(BLOCK) * BLOCK
}

/// An entry's name, as the bytes the tar holds.
fn entry_name(header: &[u8; BLOCK], local: &Overrides, global: &Overrides) -> Vec<u8> {
    if let Some(p) = local.path.as_ref().or(global.path.as_ref()) {
        return p.clone();
    }
    let name = c_string(&header[0..100]);
    // POSIX ustar ("ustar\0" "00") has a prefix field; GNU ("ustar  \0") uses those bytes otherwise.
    if &header[257..263] == b"ustar\0" {
        let prefix = c_string(&header[345..500]);
        if !prefix.is_empty() {
            return [prefix, b"/", name].concat();
        }
    }
    name.to_vec()
}

fn c_string(b: &[u8]) -> &[u8] {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..end]
}

fn verify_checksum(header: &[u8; BLOCK], pos: usize) -> Result<(), ContainerError> {
    let stored = numeric(&header[148..156], pos, "checksum")?;
    let mut unsigned: u64 = 0;
    let mut signed: i64 = 0;
    for (i, &b) in header.iter().enumerate() {
        let b = if (148..156).contains(&i) { b' ' } else { b };
        unsigned += u64::from(b);
        signed += i64::from(b as i8);
    }
    if stored != unsigned && stored as i64 != signed {
        return Err(ContainerError::TarChecksum {
            offset: pos as u64,
            stored,
            computed: unsigned,
        });
    }
    Ok(())
}

/// A tar numeric field: octal digits (with leading spaces/NULs, ended by a
/// space or NUL) or GNU base-256 when the high bit of the first byte is set.
fn numeric(field: &[u8], pos: usize, what: &'static str) -> Result<u64, ContainerError> {
    let bad = |detail: String| ContainerError::TarField {
        offset: pos as u64,
        field: what,
        detail,
    };
    if field.first().is_some_and(|&b| b & 0x80 != 0) {
        if field[0] & 0x40 != 0 {
            return Err(bad("negative base-256 value".into()));
        }
        let mut v: u64 = u64::from(field[0] & 0x3f);
        for &b in &field[1..] {
            v = v
                .checked_mul(256)
                .and_then(|v| v.checked_add(u64::from(b)))
                .ok_or_else(|| bad("base-256 value overflows 64 bits".into()))?;
        }
        return Ok(v);
    }
    let mut v: u64 = 0;
    let mut seen_digit = false;
    for &b in field {
        match b {
            b'0'..=b'7' => {
                seen_digit = true;
                v = v
                    .checked_mul(8)
                    .and_then(|v| v.checked_add(u64::from(b - b'0')))
                    .ok_or_else(|| bad("octal value overflows 64 bits".into()))?;
            }
            b' ' | 0 if !seen_digit => {}
            b' ' | 0 => break,
            _ => return Err(bad(format!("invalid byte {b:#04x} in an octal field"))),
        }
    }
    Ok(v)
}

/// Applies the `path` and `size` records of a pax header; other keys are
/// metadata the loader does not use.
fn merge_pax(mut into: Overrides, body: &[u8], pos: usize) -> Result<Overrides, ContainerError> {
    let bad = |detail: String| ContainerError::BadPax {
        offset: pos as u64,
        detail,
    };
    let mut rest = body;
    while !rest.is_empty() {
        if rest.iter().all(|&b| b == 0) {
            break;
        }
        let sp = rest
            .iter()
            .position(|&b| b == b' ')
            .ok_or_else(|| bad("record without a length".into()))?;
        let len: usize = std::str::from_utf8(&rest[..sp])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("record length is not a number".into()))?;
        if len <= sp + 1 || len > rest.len() || rest[len - 1] != b'\n' {
            return Err(bad(format!("record length {len} does not fit the header")));
        }
        let record = &rest[sp + 1..len - 1];
        let eq = record
            .iter()
            .position(|&b| b == b'=')
            .ok_or_else(|| bad("record without '='".into()))?;
        let (key, value) = (&record[..eq], &record[eq + 1..]);
        match key {
            b"path" => into.path = Some(value.to_vec()),
            b"size" => {
                let s = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok())
                    .ok_or_else(|| bad("size record is not a number".into()))?;
                into.size = Some(s);
            }
            _ => {}
        }
        rest = &rest[len..];
    }
    Ok(into)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_fields() {
        assert_eq!(numeric(b"000664 \0", 0, "mode").unwrap(), 0o664);
        assert_eq!(numeric(b"  17\0\0\0\0", 0, "x").unwrap(), 0o17);
        assert_eq!(numeric(b"\0\0\0\0\0\0\0\0", 0, "x").unwrap(), 0);
        assert!(numeric(b"0009    ", 0, "x").is_err());
        assert!(numeric(&[0xff; 12], 0, "x").is_err());
        let mut big = [0u8; 12];
        big[0] = 0x80;
        big[11] = 5;
        assert_eq!(numeric(&big, 0, "x").unwrap(), 5);
    }
}
