//! The payload as an in-memory archive: decode the window once into ONE
//! buffer, then walk the tar in place so every member is a borrowed view.
//!
//! Decoding is chosen by content, as libarchive does for the reference
//! runtime: a window starting with a gzip header is inflated, anything else
//! is read as a raw tar. How each part is read is its own module:
//! [`super::gzip`] inflates, [`super::tar`] walks.

use std::collections::HashMap;

use super::gzip::{inflate, reserve, Encoding, GZIP_MAGIC, STREAM_CHUNK};
use super::release::{ReadFront, Reader};
use super::tar::{walk_tar, Member};
use super::ContainerError;
use crate::shared::SharedBytes;

/// Default ceiling on the inflated payload: `RATIO ×` the window, but never
/// below `FLOOR` nor above `CAP`. Real NEFFs inflate about 6×; the ratio
/// leaves ten times that headroom, and callers with unusually compressible
/// payloads (zero-filled weights) raise the limit explicitly.
pub const DEFAULT_INFLATE_RATIO: u64 = 64;
pub const DEFAULT_INFLATE_FLOOR: u64 = 256 << 20;
pub const DEFAULT_INFLATE_CAP: u64 = 32 << 30;

/// The default inflated-size ceiling for a window of `window_len` bytes.
pub fn default_inflate_limit(window_len: u64) -> u64 {
    window_len
        .saturating_mul(DEFAULT_INFLATE_RATIO)
        .clamp(DEFAULT_INFLATE_FLOOR, DEFAULT_INFLATE_CAP)
}

/// Default ceiling on the entries of the tar (`NEFFLD_MAX_MEMBERS`,
/// [`super::OpenOptions::max_members`]): every header counts, metadata
/// entries and directories included. A member costs at least one 512-byte
/// header, so the inflate ceiling alone admits half a million members per
/// 256 MiB — each with a name, an index entry and possibly a warning, far
/// more host memory than its bytes. Real NEFFs have tens of members per
/// subgraph; 2^17 leaves room for thousands of subgraphs.
pub const DEFAULT_MAX_MEMBERS: u64 = 1 << 17;

/// Which decoded buffer an [`Archive`] is. A member's range means nothing
/// in another archive's buffer, yet reads there without complaint: views
/// that keep ranges (`manifest::Blob`) carry the id of the archive they
/// came from and are read only through it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct ArchiveId(u64);

impl ArchiveId {
    fn fresh() -> ArchiveId {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        ArchiveId(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

/// The decoded payload and its member table.
///
/// Owns the one decoded buffer; members are ranges into it, so looking a
/// member up never copies. Duplicate names: the **last** occurrence wins
/// (as in the reference runtime's map assignment and Python's `tarfile`),
/// the earlier body is dropped and a warning names the path.
#[derive(Clone, Debug, Default)]
pub struct Archive {
    id: ArchiveId,
    data: SharedBytes,
    members: Vec<Member>,
    /// By exact name bytes: names that differ only in bytes that are not
    /// UTF-8 are different members.
    index: HashMap<Box<[u8]>, usize>,
    encoding: Option<Encoding>,
    warnings: Vec<String>,
}

impl Archive {
    /// Decodes a payload window and walks its tar of at most
    /// [`DEFAULT_MAX_MEMBERS`] entries.
    pub fn decode(window: &[u8], inflate_limit: u64) -> Result<Archive, ContainerError> {
        Archive::decode_with(window, inflate_limit, DEFAULT_MAX_MEMBERS)
    }

    /// Decodes a payload window and walks its tar of at most `max_members`
    /// entries.
    pub fn decode_with(
        window: &[u8],
        inflate_limit: u64,
        max_members: u64,
    ) -> Result<Archive, ContainerError> {
        Archive::decode_with_progress(window, inflate_limit, max_members, None)
    }

    /// As [`Archive::decode_with`], telling `front` how far the decoder has
    /// read the window, so that its owner can release what was read. A
    /// payload of at least [`STREAM_MIN`](super::gzip::STREAM_MIN) bytes is then inflated as a
    /// stream, a chunk at a time, instead of in one call that needs the
    /// whole window resident until it returns.
    pub(crate) fn decode_with_progress(
        window: &[u8],
        inflate_limit: u64,
        max_members: u64,
        front: Option<&ReadFront<'_>>,
    ) -> Result<Archive, ContainerError> {
        let (data, encoding) = if window.len() >= 3 && window[..3] == GZIP_MAGIC {
            inflate(window, inflate_limit, front)?
        } else {
            if window.len() as u64 > inflate_limit {
                return Err(ContainerError::InflateLimit {
                    limit: inflate_limit,
                });
            }
            (
                SharedBytes::new(copy_with_progress(window, front)?),
                Encoding::RawTar,
            )
        };
        let mut archive = Archive::from_shared(data, max_members)?;
        if let Encoding::Gzip {
            nonzero_trailing: true,
            trailing,
            ..
        } = encoding
        {
            archive.warnings.push(format!(
                "{trailing} bytes after the gzip stream are not all zero"
            ));
        }
        archive.encoding = Some(encoding);
        Ok(archive)
    }

    /// Walks an already-decoded tar buffer of at most
    /// [`DEFAULT_MAX_MEMBERS`] entries.
    pub fn from_tar(data: Vec<u8>) -> Result<Archive, ContainerError> {
        Archive::from_tar_with(data, DEFAULT_MAX_MEMBERS)
    }

    /// Walks an already-decoded tar buffer of at most `max_members` entries.
    pub fn from_tar_with(data: Vec<u8>, max_members: u64) -> Result<Archive, ContainerError> {
        Archive::from_shared(SharedBytes::new(data), max_members)
    }

    fn from_shared(data: SharedBytes, max_members: u64) -> Result<Archive, ContainerError> {
        let walk = walk_tar(&data, max_members)?;
        let mut members = walk.members;
        let mut warnings = walk.warnings;
        let mut index: HashMap<Box<[u8]>, usize> = HashMap::with_capacity(members.len());
        let mut superseded = vec![false; members.len()];
        for (i, m) in members.iter().enumerate() {
            if let Some(prev) = index.insert(m.name_bytes().into(), i) {
                superseded[prev] = true;
                warnings.push(format!(
                    "duplicate member \"{}\" at offset {:#x}: the later entry replaces the one at {:#x}",
                    m.name, m.header_offset, members[prev].header_offset
                ));
            }
        }
        if superseded.iter().any(|&s| s) {
            let mut keep = superseded.iter().map(|s| !s);
            members.retain(|_| keep.next().unwrap_or(true));
            index = members
                .iter()
                .enumerate()
                .map(|(i, m)| (m.name_bytes().into(), i))
                .collect();
        }
        Ok(Archive {
            id: ArchiveId::fresh(),
            data,
            members,
            index,
            encoding: None,
            warnings,
        })
    }

    /// The body of a member, by exact (byte-wise, case-sensitive) name.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.get_exact(name.as_bytes())
    }

    /// The body of a member, by the exact bytes of its name (one that is
    /// not UTF-8 included: no manifest can name it, but a tool can).
    pub fn get_exact(&self, name: &[u8]) -> Option<&[u8]> {
        self.index.get(name).map(|&i| self.body(&self.members[i]))
    }

    /// The member record, by name.
    pub fn member(&self, name: &str) -> Option<&Member> {
        self.index.get(name.as_bytes()).map(|&i| &self.members[i])
    }

    /// A member of that name is in the archive.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name.as_bytes())
    }

    /// The body of one of this archive's members.
    pub fn body(&self, m: &Member) -> &[u8] {
        &self.data[m.range.clone()]
    }

    /// Members in archive order (duplicates already resolved).
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// Name and body of every member, in archive order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.members.iter().map(|m| (m.name.as_str(), self.body(m)))
    }

    /// Members in the archive.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// No members at all.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Which archive this is, for a device that keeps references into it.
    pub(crate) fn id(&self) -> ArchiveId {
        self.id
    }

    /// Size of the decoded buffer (the inflated tar).
    pub fn decoded_len(&self) -> usize {
        self.data.len()
    }

    /// The decoded tar bytes.
    pub fn decoded(&self) -> &[u8] {
        &self.data
    }

    /// The decoded tar bytes as a handle a device may keep, so that what it
    /// stages from a member can be referenced rather than copied.
    pub(crate) fn shared(&self) -> &SharedBytes {
        &self.data
    }

    /// How the payload was stored (`None`: a raw tar).
    pub fn encoding(&self) -> Option<Encoding> {
        self.encoding
    }

    /// Non-fatal findings: duplicate names, non-zero padding, a missing end marker.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

/// A raw-tar window copied into the archive's buffer, a chunk at a time so
/// that what was copied can be released.
fn copy_with_progress(window: &[u8], front: Option<&ReadFront<'_>>) -> Result<Vec<u8>, ContainerError> {
    let mut out = Vec::new();
    reserve(&mut out, window.len() as u64)?;
    for chunk in window.chunks(STREAM_CHUNK) {
        out.extend_from_slice(chunk);
        if let Some(f) = front {
            f.passed(Reader::Decode, out.len());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::tar::MemberKind;
    use crate::container::writer::{pax_record, tar_of, TarEntry, TarFormat};
    use crate::NrtStatus;

    /// A name that is not UTF-8 is kept as the tar's bytes: two names that
    /// differ only in such bytes are two members, not a duplicate.
    #[test]
    fn names_that_are_not_utf8_keep_their_bytes() {
        let data = tar_of(&[
            TarEntry::file(b"sg00/\xff\xferaw.bin", b"1"),
            TarEntry::file(b"sg00/\xfe\xferaw.bin", b"2"),
            TarEntry::file("sg00/ok.bin", b"3"),
        ]);
        let a = Archive::from_tar(data).unwrap();
        assert!(a.warnings().is_empty(), "{:?}", a.warnings());
        let names: Vec<&[u8]> = a.members().iter().map(Member::name_bytes).collect();
        assert_eq!(
            names,
            [
                &b"sg00/\xff\xferaw.bin"[..],
                b"sg00/\xfe\xferaw.bin",
                b"sg00/ok.bin"
            ]
        );
        assert_eq!(a.body(&a.members()[1]), b"2");
        assert!(a.members()[0].name.contains('\u{fffd}'));
        assert_eq!(a.members()[2].raw_name, None, "UTF-8 names are kept once");
        assert_eq!(a.get("sg00/ok.bin"), Some(&b"3"[..]));
        assert_eq!(a.get_exact(b"sg00/\xfe\xferaw.bin"), Some(&b"2"[..]));
        assert_eq!(
            a.get(&a.members()[1].name),
            None,
            "the text is not the name"
        );
    }

    #[test]
    fn walks_ustar_and_borrows_bodies() {
        let data = tar_of(&[
            TarEntry::file("a.json", b"{}"),
            TarEntry::file("sg00/x.bin", &[7u8; 600]),
        ]);
        let a = Archive::from_tar(data).unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a.get("a.json"), Some(&b"{}"[..]));
        assert_eq!(a.get("sg00/x.bin").unwrap().len(), 600);
        assert_eq!(a.member("sg00/x.bin").unwrap().header_offset, 1024);
        // The body is a view into the one buffer, not a copy.
        let base = a.decoded().as_ptr() as usize;
        let body = a.get("sg00/x.bin").unwrap().as_ptr() as usize;
        assert_eq!(body - base, 1536);
    }

    #[test]
    fn skips_dirs_strips_dot_slash_and_drops_wavegraph() {
        let mut dir = TarEntry::file("sg00/", b"");
        dir.typeflag = b'5';
        let data = tar_of(&[
            dir,
            TarEntry::file("./neff.json", b"1"),
            TarEntry::file("sg00/wavegraph-bin.json", b"zz"),
            TarEntry::file("wavegraph-bin.json", b"zz"),
        ]);
        let a = Archive::from_tar(data).unwrap();
        let names: Vec<_> = a.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["neff.json"]);
    }

    #[test]
    fn duplicate_names_last_wins_with_warning() {
        let data = tar_of(&[
            TarEntry::file("./a", b"first"),
            TarEntry::file("b", b"b"),
            TarEntry::file("a", b"second"),
        ]);
        let a = Archive::from_tar(data).unwrap();
        assert_eq!(a.get("a"), Some(&b"second"[..]));
        assert_eq!(a.len(), 2);
        assert!(a
            .warnings()
            .iter()
            .any(|w| w.contains("duplicate member \"a\"")));
        let names: Vec<_> = a.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["b", "a"]);
    }

    #[test]
    fn pax_gnu_and_prefix_names() {
        let long = format!("sg00/{}.npy", "n".repeat(140));
        let mut pax = TarEntry::file("PaxHeader/x", &pax_record("path", &long));
        pax.typeflag = b'x';
        let mut gnu_l = TarEntry::file("././@LongLink", format!("{long}.gnu\0").as_bytes());
        gnu_l.typeflag = b'L';
        gnu_l.format = TarFormat::Gnu;
        let mut gnu_file = TarEntry::file("truncated", b"g");
        gnu_file.format = TarFormat::Gnu;
        let mut prefixed = TarEntry::file("leaf.json", b"p");
        prefixed.prefix = "some/deep/dir".into();
        let data = tar_of(&[
            pax,
            TarEntry::file("short", b"p1"),
            gnu_l,
            gnu_file,
            prefixed,
        ]);
        let a = Archive::from_tar(data).unwrap();
        assert_eq!(a.get(&long), Some(&b"p1"[..]));
        assert_eq!(a.get(&format!("{long}.gnu")), Some(&b"g"[..]));
        assert_eq!(a.get("some/deep/dir/leaf.json"), Some(&b"p"[..]));
        assert!(!a.contains("short"));
        assert_eq!(a.len(), 3);
    }

    #[test]
    fn pax_size_override_and_global_header() {
        let mut g = TarEntry::file("pax_global_header", b"20 comment=anything\n");
        g.typeflag = b'g';
        let mut x = TarEntry::file("PaxHeader/f", b"12 size=300\n");
        x.typeflag = b'x';
        let mut f = TarEntry::file("f", &[1u8; 300]);
        f.header_size = Some(0);
        let a = Archive::from_tar(tar_of(&[g, x, f])).unwrap();
        assert_eq!(a.get("f").unwrap().len(), 300);
        assert_eq!(a.len(), 1);
    }

    #[test]
    fn base256_size() {
        let mut f = TarEntry::file("big", &[3u8; 10]);
        f.base256_size = true;
        let a = Archive::from_tar(tar_of(&[f])).unwrap();
        assert_eq!(a.get("big"), Some(&[3u8; 10][..]));
    }

    #[test]
    fn the_member_ceiling_counts_every_entry() {
        // A pax header counts as an entry although it names no member.
        let mut x = TarEntry::file("PaxHeader/a", &pax_record("path", "long/a"));
        x.typeflag = b'x';
        let data = tar_of(&[x, TarEntry::file("a", b"1"), TarEntry::file("b", b"2")]);
        assert_eq!(Archive::from_tar_with(data.clone(), 3).unwrap().len(), 2);
        let e = Archive::from_tar_with(data.clone(), 2).unwrap_err();
        assert!(
            matches!(
                e,
                ContainerError::TooManyMembers {
                    limit: 2,
                    offset: 2048
                }
            ),
            "{e}"
        );
        assert_eq!(e.status(), NrtStatus::Invalid);
        assert_eq!(
            Archive::from_tar_with(data, 0).unwrap_err().to_string(),
            "the NEFF payload has more than 0 tar entries (the one at offset 0x0 is past the ceiling): neffld's own ceiling, not the runtime's; NEFFLD_MAX_MEMBERS raises it"
        );
    }

    #[test]
    fn links_are_empty_members() {
        let mut l = TarEntry::file("link", b"");
        l.typeflag = b'2';
        let a = Archive::from_tar(tar_of(&[l])).unwrap();
        assert_eq!(a.member("link").unwrap().kind, MemberKind::Special(b'2'));
        assert_eq!(a.get("link"), Some(&b""[..]));
    }

    #[test]
    fn bad_checksum_names_the_offset() {
        let mut data = tar_of(&[TarEntry::file("a", b"x"), TarEntry::file("b", b"y")]);
        data[1024 + 10] ^= 0x40; // corrupt the second header's name
        let e = Archive::from_tar(data).unwrap_err();
        assert!(
            matches!(e, ContainerError::TarChecksum { offset: 1024, .. }),
            "{e:?}"
        );
        assert_eq!(e.status(), NrtStatus::Invalid);
        assert!(e.to_string().contains("0x400"), "{e}");
    }

    #[test]
    fn member_running_past_the_end_is_named() {
        let mut data = tar_of(&[TarEntry::file("sg00/def.json", &[b'x'; 2000])]);
        data.truncate(1200);
        let e = Archive::from_tar(data).unwrap_err();
        assert!(e.to_string().contains("sg00/def.json"), "{e}");
        assert!(matches!(
            e,
            ContainerError::MemberPastEnd { size: 2000, .. }
        ));
    }

    #[test]
    fn partial_header_and_missing_end_marker() {
        let mut data = tar_of(&[TarEntry::file("a", b"x")]);
        data.truncate(1024 + 100);
        assert!(matches!(
            Archive::from_tar(data).unwrap_err(),
            ContainerError::TarTruncated { offset: 1024, .. }
        ));
        let mut data = tar_of(&[TarEntry::file("a", b"x")]);
        data.truncate(1024);
        let a = Archive::from_tar(data).unwrap();
        assert_eq!(a.len(), 1);
        assert!(a.warnings()[0].contains("end-of-archive"));
    }

    #[test]
    fn empty_window_is_an_empty_archive() {
        let a = Archive::decode(&[], 1 << 20).unwrap();
        assert!(a.is_empty());
        assert_eq!(a.encoding(), Some(Encoding::RawTar));
    }

    #[test]
    fn gzip_padding_is_ignored_and_a_second_member_is_appended() {
        use crate::container::writer::gzip;
        let t1 = tar_of(&[TarEntry::file("a", b"1")]);
        let mut w = gzip(&t1[..512 * 2], 1);
        w.extend_from_slice(&gzip(&t1[1024..], 1));
        w.extend_from_slice(&[0u8; 3000]);
        let a = Archive::decode(&w, 1 << 20).unwrap();
        assert_eq!(a.get("a"), Some(&b"1"[..]));
        assert_eq!(
            a.encoding(),
            Some(Encoding::Gzip {
                members: 2,
                trailing: 3000,
                nonzero_trailing: false
            })
        );
        // Non-zero garbage after the member is ignored, with a warning.
        let mut w = gzip(&t1, 1);
        w.extend_from_slice(b"garbage!");
        let a = Archive::decode(&w, 1 << 20).unwrap();
        assert_eq!(a.len(), 1);
        assert!(!a.warnings().is_empty());
    }

    #[test]
    fn gzip_errors_are_clean() {
        use crate::container::writer::gzip;
        let t = tar_of(&[TarEntry::file("a", &[9u8; 5000])]);
        let w = gzip(&t, 1);
        // truncated
        let e = Archive::decode(&w[..w.len() / 2], 1 << 20).unwrap_err();
        assert!(e.to_string().contains("truncated gzip input"), "{e}");
        // bad CRC (trailer bytes)
        let mut bad = w.clone();
        let n = bad.len();
        bad[n - 6] ^= 0xff;
        let e = Archive::decode(&bad, 1 << 20).unwrap_err();
        assert!(matches!(e, ContainerError::Gzip { member: 1, .. }), "{e:?}");
        assert_eq!(e.status(), NrtStatus::Invalid);
        // corrupt deflate body
        let mut bad = w.clone();
        for b in &mut bad[12..40] {
            *b = 0xff;
        }
        assert!(Archive::decode(&bad, 1 << 20).is_err());
    }

    /// With a front, a large window takes the stream; a raw tar is copied
    /// chunk by chunk with the same report.
    #[test]
    fn a_released_window_from_the_threshold_up_streams() {
        let ends = std::sync::Mutex::new(Vec::new());
        let raw = tar_of(&[TarEntry::file("a", &vec![5u8; 2 * STREAM_CHUNK])]);
        {
            let rel = |end: usize| ends.lock().unwrap().push(end);
            let front = ReadFront::new(&rel, raw.len(), false);
            let a = Archive::decode_with_progress(&raw, 1 << 30, 10, Some(&front)).unwrap();
            assert_eq!(a.decoded(), &raw[..]);
            assert_eq!(a.encoding(), Some(Encoding::RawTar));
        }
        let ends = ends.into_inner().unwrap();
        assert_eq!(ends, [STREAM_CHUNK, 2 * STREAM_CHUNK, raw.len()]);
    }

    #[test]
    fn gzip_header_fields_are_walked_and_checked() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let t = tar_of(&[TarEntry::file("a", b"payload")]);
        // FEXTRA + FNAME + FCOMMENT, as GzBuilder writes them.
        let mut enc: GzEncoder<Vec<u8>> = flate2::GzBuilder::new()
            .extra(vec![1, 2, 3, 4])
            .filename("neff.tar")
            .comment("built for a test")
            .write(Vec::new(), flate2::Compression::fast());
        enc.write_all(&t).unwrap();
        let w = enc.finish().unwrap();
        assert_eq!(w[3], 0x04 | 0x08 | 0x10);
        assert_eq!(
            Archive::decode(&w, 1 << 20).unwrap().get("a"),
            Some(&b"payload"[..])
        );

        // FHCRC: a correct header CRC passes, a wrong one is rejected.
        let plain = crate::container::writer::gzip(&t, 1);
        let mut with_hcrc = plain[..10].to_vec();
        with_hcrc[3] |= 0x02;
        let mut crc = flate2::Crc::new();
        crc.update(&with_hcrc);
        with_hcrc.extend_from_slice(&(crc.sum() as u16).to_le_bytes());
        with_hcrc.extend_from_slice(&plain[10..]);
        assert!(Archive::decode(&with_hcrc, 1 << 20).is_ok());
        let mut bad = with_hcrc.clone();
        bad[10] ^= 1;
        let e = Archive::decode(&bad, 1 << 20).unwrap_err().to_string();
        assert!(e.contains("header CRC mismatch"), "{e}");

        // Reserved flag bits, and a lying ISIZE.
        let mut r = plain.clone();
        r[3] |= 0x80;
        assert!(Archive::decode(&r, 1 << 20)
            .unwrap_err()
            .to_string()
            .contains("reserved header flag bits"));
        let mut r = plain.clone();
        let n = r.len();
        r[n - 1] ^= 1;
        assert!(Archive::decode(&r, 1 << 20)
            .unwrap_err()
            .to_string()
            .contains("ISIZE mismatch"));
        // A header cut short.
        assert!(Archive::decode(&plain[..6], 1 << 20)
            .unwrap_err()
            .to_string()
            .contains("truncated gzip input"));
    }

    #[test]
    fn inflate_limit_stops_a_bomb() {
        use crate::container::writer::gzip;
        let zeros = vec![0u8; 8 << 20];
        let w = gzip(&zeros, 9);
        assert!(w.len() < 64 << 10);
        let e = Archive::decode(&w, 1 << 20).unwrap_err();
        assert!(matches!(e, ContainerError::InflateLimit { limit: 1048576 }));
        assert_eq!(e.status(), NrtStatus::Invalid);
        assert!(e.to_string().contains("1048576"), "{e}");
    }

    #[test]
    fn default_limit_is_clamped() {
        assert_eq!(default_inflate_limit(1000), DEFAULT_INFLATE_FLOOR);
        assert_eq!(default_inflate_limit(1 << 30), DEFAULT_INFLATE_CAP);
        assert_eq!(default_inflate_limit(100 << 20), 6400 << 20);
    }
}
