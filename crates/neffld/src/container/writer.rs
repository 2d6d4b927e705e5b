//! Builds NEFF files byte for byte the way each compiler family does.
//!
//! The writer is the project's fixture generator: every case the real
//! fixtures lack (trn1 files, the 2.0.99229 PAX producer, pkg_version 1,
//! every reject) is made here, and the real fixtures prove it by being
//! reproduced exactly from their own members (see the container tests).

use std::io::Write;

use flate2::write::GzEncoder;
use flate2::{Compression, GzBuilder};

use super::header::{NeffHeader, HEADER_LEN};
use super::integrity::{stored_digest, DigestForm};

/// The payload window is zero-padded to a multiple of this (libarchive's
/// default output block, applied after compression).
pub const PAYLOAD_BLOCK: usize = 10240;

/// A gzip MTIME like the ones real producers write (they stamp build time).
pub const DEFAULT_GZIP_MTIME: u32 = 1_782_166_602;

/// A compiler family, by the container format it writes (parse.md §13.1, §13.13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Producer {
    /// 2.0.99229 (sunda): a PAX `x` header before every member, empty owner
    /// names, real mtimes, fully sorted, plain MD5.
    V2_0_99229,
    /// 2.18 (sunda): plain ustar, `nobody`, mtime 0, fully sorted, word-swapped MD5.
    V2_18,
    /// 2.21 and later (cayman): as 2.18 but `neff.json` is the last member.
    V2_21,
    /// pkg_version 1: a raw (uncompressed) tar and a SHA-256 digest.
    Pkg1,
}

impl Producer {
    /// Every producer family, oldest first.
    pub const ALL: [Producer; 4] = [
        Producer::V2_0_99229,
        Producer::V2_18,
        Producer::V2_21,
        Producer::Pkg1,
    ];

    /// The family a compiler for `arch` writes by default: trn1 compilers
    /// stop at 2.18, later chips' start at 2.21.
    pub fn for_arch(arch: crate::Arch) -> Producer {
        match arch {
            crate::Arch::Sunda => Producer::V2_18,
            crate::Arch::Cayman | crate::Arch::Mariana => Producer::V2_21,
        }
    }

    /// A header as this family writes it before the payload fields are
    /// filled in: sunda families are NEFF 1.0 with LNC 1 and no feature
    /// bits; 2.21+ is NEFF 2.0, LNC 2, `0xC00`.
    pub fn default_header(self) -> NeffHeader {
        let mut h = NeffHeader::default();
        match self {
            Producer::V2_0_99229 | Producer::V2_18 | Producer::Pkg1 => {
                h.version_major = 1;
                h.vnc_size = 1;
                h.feature_bits = 0;
            }
            Producer::V2_21 => {
                h.version_major = 2;
                h.vnc_size = 2;
                h.feature_bits = 0xC00;
            }
        }
        h.pkg_version = if self == Producer::Pkg1 { 1 } else { 2 };
        h.set_name("file.neff");
        h
    }

    fn digest_form(self) -> DigestForm {
        match self {
            Producer::V2_0_99229 | Producer::Pkg1 => DigestForm::Plain,
            Producer::V2_18 | Producer::V2_21 => DigestForm::WordSwapped,
        }
    }
}

/// Tar header dialects the walker accepts; tests use all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TarFormat {
    /// POSIX ustar: magic `ustar\0`, version `00`.
    Ustar,
    /// GNU: magic `ustar  \0`.
    #[cfg(any(test, feature = "testkit"))]
    Gnu,
    /// Version 7: no magic, no owner names.
    V7,
}

/// One tar entry to encode, with every field the producers vary. Names are
/// bytes, as a tar holds them (a file name need not be UTF-8).
#[derive(Clone, Debug)]
pub struct TarEntry {
    pub name: Vec<u8>,
    /// The ustar prefix field (joined to `name` with a `/` by readers).
    pub prefix: Vec<u8>,
    pub data: Vec<u8>,
    pub typeflag: u8,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub uname: String,
    pub gname: String,
    pub mtime: u64,
    pub format: TarFormat,
    /// Writes this value in the size field instead of `data.len()`
    /// (to build entries whose size is carried by a pax record, or lies).
    pub header_size: Option<u64>,
    /// Encodes the size field in GNU base-256.
    pub base256_size: bool,
}

impl TarEntry {
    /// A regular file as the 2.18+ producers write it.
    pub fn file(name: impl AsRef<[u8]>, data: &[u8]) -> TarEntry {
        TarEntry {
            name: name.as_ref().to_vec(),
            prefix: Vec::new(),
            data: data.to_vec(),
            typeflag: b'0',
            mode: 0o664,
            uid: 1000,
            gid: 1000,
            uname: "nobody".into(),
            gname: "nobody".into(),
            mtime: 0,
            format: TarFormat::Ustar,
            header_size: None,
            base256_size: false,
        }
    }
}

/// libarchive's numeric style: `width - 2` octal digits, then space, then NUL
/// (size and mtime use `width - 1` digits and a space).
fn octal(field: &mut [u8], value: u64, digits: usize, terminator: &[u8]) {
    let s = format!("{value:0digits$o}");
    let s = s.as_bytes();
    let s = &s[s.len().saturating_sub(digits)..];
    field[..s.len()].copy_from_slice(s);
    field[s.len()..s.len() + terminator.len()].copy_from_slice(terminator);
}

fn put_str(field: &mut [u8], s: impl AsRef<[u8]>) {
    let s = s.as_ref();
    let n = s.len().min(field.len());
    field[..n].copy_from_slice(&s[..n]);
}

/// A tar of exactly these entries, then the end marker: no ordering, no
/// pax records added, so a test can give the reader any dialect.
#[cfg(any(test, feature = "testkit"))]
pub fn tar_of(entries: &[TarEntry]) -> Vec<u8> {
    let mut out: Vec<u8> = entries.iter().flat_map(tar_entry).collect();
    out.extend_from_slice(&[0u8; 1024]);
    out
}

/// Encodes one entry: its 512-byte header and its body padded to 512.
pub fn tar_entry(e: &TarEntry) -> Vec<u8> {
    let mut h = [0u8; 512];
    put_str(&mut h[0..100], &e.name);
    octal(&mut h[100..108], u64::from(e.mode), 6, b" \0");
    octal(&mut h[108..116], u64::from(e.uid), 6, b" \0");
    octal(&mut h[116..124], u64::from(e.gid), 6, b" \0");
    let size = e.header_size.unwrap_or(e.data.len() as u64);
    // Sizes of 8 GiB and more do not fit 11 octal digits: use base-256.
    if e.base256_size || size > 0o777_7777_7777 {
        h[124] = 0x80;
        h[128..136].copy_from_slice(&size.to_be_bytes());
    } else {
        octal(&mut h[124..136], size, 11, b" ");
    }
    octal(&mut h[136..148], e.mtime, 11, b" ");
    h[156] = e.typeflag;
    match e.format {
        TarFormat::Ustar => {
            h[257..263].copy_from_slice(b"ustar\0");
            h[263..265].copy_from_slice(b"00");
        }
        #[cfg(any(test, feature = "testkit"))]
        TarFormat::Gnu => h[257..265].copy_from_slice(b"ustar  \0"),
        TarFormat::V7 => {}
    }
    if e.format != TarFormat::V7 {
        put_str(&mut h[265..297], &e.uname);
        put_str(&mut h[297..329], &e.gname);
        octal(&mut h[329..337], 0, 6, b" \0");
        octal(&mut h[337..345], 0, 6, b" \0");
    }
    if e.format == TarFormat::Ustar {
        put_str(&mut h[345..500], &e.prefix);
    }
    h[148..156].fill(b' ');
    let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
    octal(&mut h[148..156], sum, 6, b"\0 ");
    let mut out = Vec::with_capacity(512 + e.data.len().div_ceil(512) * 512);
    out.extend_from_slice(&h);
    out.extend_from_slice(&e.data);
    out.resize(512 + e.data.len().div_ceil(512) * 512, 0);
    out
}

/// A pax record `"<len> key=value\n"`, where `len` counts the whole record.
pub fn pax_record(key: &str, value: impl AsRef<[u8]>) -> Vec<u8> {
    let value = value.as_ref();
    let body = key.len() + value.len() + 3; // space, '=', newline
    let mut len = body + 1;
    while len != body + len.to_string().len() {
        len = body + len.to_string().len();
    }
    let mut out = format!("{len} {key}=").into_bytes();
    out.extend_from_slice(value);
    out.push(b'\n');
    out
}

/// Splits a long name into (prefix, name) for the ustar fields, if possible.
fn split_ustar_name(name: &[u8]) -> Option<(&[u8], &[u8])> {
    if name.len() <= 100 {
        return Some((&[], name));
    }
    name.iter()
        .enumerate()
        .filter(|&(_, &c)| c == b'/')
        .map(|(i, _)| i)
        .find(|&i| i <= 155 && name.len() - i - 1 <= 100 && i > 0)
        .map(|i| (&name[..i], &name[i + 1..]))
}

/// `dir/PaxHeader/base`, the name libarchive gives a per-file pax header.
fn pax_header_name(name: &[u8]) -> Vec<u8> {
    match name.iter().rposition(|&c| c == b'/') {
        Some(i) => [&name[..i], b"/PaxHeader/", &name[i + 1..]].concat(),
        None => [b"PaxHeader/", name].concat(),
    }
}

/// gzip with the given level; header MTIME `mtime`, OS = 3 (Unix). flate2
/// writes XFL = 4 at level 1, as the real producers' files carry.
pub fn gzip_with_mtime(data: &[u8], level: u32, mtime: u32) -> Vec<u8> {
    let mut enc: GzEncoder<Vec<u8>> = GzBuilder::new().mtime(mtime).operating_system(3).write(
        Vec::with_capacity(data.len() / 4 + 64),
        Compression::new(level),
    );
    enc.write_all(data).expect("writing to a Vec cannot fail");
    enc.finish().expect("writing to a Vec cannot fail")
}

/// gzip with the default build-time MTIME.
#[cfg(any(test, feature = "testkit"))]
pub fn gzip(data: &[u8], level: u32) -> Vec<u8> {
    gzip_with_mtime(data, level, DEFAULT_GZIP_MTIME)
}

/// Writes NEFFs in one producer family's format.
#[derive(Clone, Debug)]
pub struct NeffWriter {
    /// The family whose format is written.
    pub producer: Producer,
    /// Header template; `pkg_version`, `data_size` and `hash` are filled in.
    pub header: NeffHeader,
    /// The gzip header's mtime (pkg 2).
    pub gzip_mtime: u32,
    /// Member mtime for the 2.0.99229 family (the others write 0).
    pub member_mtime: u64,
    /// Overrides the family's digest byte order.
    pub digest_form: Option<DigestForm>,
}

impl NeffWriter {
    /// A writer of `producer`'s format with its usual header.
    pub fn new(producer: Producer) -> NeffWriter {
        NeffWriter {
            producer,
            header: producer.default_header(),
            gzip_mtime: DEFAULT_GZIP_MTIME,
            member_mtime: u64::from(DEFAULT_GZIP_MTIME),
            digest_form: None,
        }
    }

    /// With an explicit header template (its `pkg_version` is kept).
    pub fn with_header(producer: Producer, header: NeffHeader) -> NeffWriter {
        NeffWriter {
            header,
            ..NeffWriter::new(producer)
        }
    }

    /// The member order this family writes. Names are bytes
    /// (`AsRef<[u8]>`: `&str` or a file name's bytes).
    pub fn order<'m, N: AsRef<[u8]> + Clone>(
        &self,
        members: &[(N, &'m [u8])],
    ) -> Vec<(N, &'m [u8])> {
        let mut sorted = members.to_vec();
        sorted.sort_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
        if self.producer == Producer::V2_21 {
            if let Some(i) = sorted.iter().position(|(n, _)| n.as_ref() == b"neff.json") {
                let last = sorted.remove(i);
                sorted.push(last);
            }
        }
        sorted
    }

    /// The uncompressed tar of the members, in this family's dialect.
    pub fn tar<N: AsRef<[u8]> + Clone>(&self, members: &[(N, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, data) in self.order(members) {
            let name = name.as_ref();
            let (prefix, short) = split_ustar_name(name).unwrap_or_default();
            let needs_pax_path = short.is_empty();
            let mut entry = TarEntry::file(if needs_pax_path { name } else { short }, data);
            entry.prefix = prefix.to_vec();
            let mut pax = Vec::new();
            if self.producer == Producer::V2_0_99229 {
                entry.uname.clear();
                entry.gname.clear();
                entry.mtime = self.member_mtime;
                for key in ["mtime", "atime", "ctime"] {
                    pax.extend(pax_record(key, self.member_mtime.to_string()));
                }
            }
            if needs_pax_path {
                pax.extend(pax_record("path", name));
            }
            if !pax.is_empty() {
                let mut x = TarEntry::file(pax_header_name(name), &pax);
                x.typeflag = b'x';
                x.uname = entry.uname.clone();
                x.gname = entry.gname.clone();
                x.mtime = entry.mtime;
                if x.name.len() > 100 {
                    // Keep the marker directory and the tail of the name; the
                    // reader takes the real path from the records anyway.
                    let tail = &name[name.len().saturating_sub(89)..];
                    x.name = [b"PaxHeader/", tail].concat();
                }
                out.extend_from_slice(&tar_entry(&x));
            }
            out.extend_from_slice(&tar_entry(&entry));
        }
        out.extend_from_slice(&[0u8; 1024]);
        out
    }

    /// The payload window: compressed (or raw) tar, zero-padded to 10240.
    pub fn payload<N: AsRef<[u8]> + Clone>(&self, members: &[(N, &[u8])]) -> Vec<u8> {
        let tar = self.tar(members);
        let mut payload = if self.producer == Producer::Pkg1 {
            tar
        } else {
            gzip_with_mtime(&tar, 1, self.gzip_mtime)
        };
        payload.resize(payload.len().div_ceil(PAYLOAD_BLOCK) * PAYLOAD_BLOCK, 0);
        payload
    }

    /// A uuid of the members (names and bytes, in order): the RFC 4122
    /// version-4 form of the first 16 bytes of their SHA-256. The runtime
    /// keys its parse cache by a NEFF's uuid, so a NEFF built without one of
    /// its own must not share it with other NEFFs (every tree once got the
    /// zero uuid); derived from the contents, the same tree still packs to
    /// the same bytes.
    pub fn content_uuid<N: AsRef<[u8]>>(members: &[(N, &[u8])]) -> [u8; 16] {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for (name, bytes) in members {
            let name = name.as_ref();
            // Lengths first, so no two member lists hash alike by moving
            // bytes across a boundary.
            h.update((name.len() as u64).to_le_bytes());
            h.update(name);
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        }
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&h.finalize()[..16]);
        uuid[6] = (uuid[6] & 0x0f) | 0x40; // version 4
        uuid[8] = (uuid[8] & 0x3f) | 0x80; // RFC 4122 variant
        uuid
    }

    /// A whole NEFF: header with size and digest filled in, then the payload.
    pub fn write<N: AsRef<[u8]> + Clone>(&self, members: &[(N, &[u8])]) -> Vec<u8> {
        self.finish(self.payload(members))
    }

    /// Puts a header in front of an arbitrary payload window (for tests
    /// that damage the payload and still want a consistent header).
    pub fn finish(&self, payload: Vec<u8>) -> Vec<u8> {
        let mut h = self.header.clone();
        h.pkg_version = if self.producer == Producer::Pkg1 {
            1
        } else {
            h.pkg_version
        };
        h.header_size = HEADER_LEN as u64;
        h.data_size = payload.len() as u64;
        let form = self.digest_form.unwrap_or(self.producer.digest_form());
        h.hash = stored_digest(h.pkg_version, &payload, form);
        let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
        out.extend_from_slice(&h.encode());
        out.extend_from_slice(&payload);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_record_length_counts_itself() {
        for (k, v) in [
            ("path", "a"),
            ("mtime", "1782166602"),
            ("path", &"x".repeat(95)),
        ] {
            let r = String::from_utf8(pax_record(k, v)).unwrap();
            let n: usize = r.split(' ').next().unwrap().parse().unwrap();
            assert_eq!(n, r.len(), "{r:?}");
        }
    }

    #[test]
    fn header_fields_are_libarchive_style() {
        let h = tar_entry(&TarEntry::file("hlo_stats.json", &[0u8; 400]));
        assert_eq!(&h[100..108], b"000664 \0");
        assert_eq!(&h[108..116], b"001750 \0");
        assert_eq!(&h[124..136], b"00000000620 ");
        assert_eq!(&h[136..148], b"00000000000 ");
        assert_eq!(h[154..156], *b"\0 ");
        assert_eq!(&h[257..265], b"ustar\x0000");
        assert_eq!(&h[265..271], b"nobody");
        assert_eq!(&h[329..337], b"000000 \0");
        assert_eq!(h.len(), 1024);
    }

    #[test]
    fn long_names_split_or_use_pax() {
        assert_eq!(split_ustar_name(b"a/b"), Some((&b""[..], &b"a/b"[..])));
        let long = format!("{}/{}", "d".repeat(120), "f".repeat(50));
        assert_eq!(
            split_ustar_name(long.as_bytes()),
            Some(("d".repeat(120).as_bytes(), "f".repeat(50).as_bytes()))
        );
        assert_eq!(split_ustar_name("x".repeat(300).as_bytes()), None);
    }

    #[test]
    fn neff_json_is_last_only_from_2_21() {
        let m: Vec<(&str, &[u8])> = vec![
            ("sg00/def.json", b"1"),
            ("neff.json", b"2"),
            ("kelf-0.json", b"3"),
        ];
        let names = |p| {
            NeffWriter::new(p)
                .order(&m)
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(Producer::V2_21),
            ["kelf-0.json", "sg00/def.json", "neff.json"]
        );
        assert_eq!(
            names(Producer::V2_18),
            ["kelf-0.json", "neff.json", "sg00/def.json"]
        );
    }
}
