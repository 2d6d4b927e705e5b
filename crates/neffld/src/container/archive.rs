//! The payload as an in-memory archive: decode the window once into ONE
//! buffer, then walk the tar in place so every member is a borrowed view.
//!
//! Decoding is chosen by content, as libarchive does for the reference
//! runtime: a window starting with a gzip header is inflated, anything else
//! is read as a raw tar. Real producers pad the gzip member with zeros up to
//! a multiple of 10240 bytes, so after a member ends the decoder continues
//! only if another gzip header follows and ignores every other trailing byte
//! (a strict multi-member decoder rejects every real NEFF).

use std::collections::HashMap;
use std::ops::Range;

use super::release::{ReadFront, Reader};
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

/// Members whose name ends with this are dropped during the walk (the
/// reference runtime never keeps them).
pub const DROPPED_SUFFIX: &str = "wavegraph-bin.json";

const BLOCK: usize = 512;
const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];

/// How the window was encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// gzip: number of members decoded, bytes after the last member, and
    /// whether any of them was non-zero (real producers pad with zeros).
    Gzip {
        members: u32,
        trailing: u64,
        nonzero_trailing: bool,
    },
    /// A raw tar (the pkg 1 form).
    RawTar,
}

/// What kind of tar entry a member came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberKind {
    Regular,
    /// Links, devices, fifos: stored as empty members, never followed.
    Special(u8),
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
    pub kind: MemberKind,
}

/// The decoded payload and its member table.
///
/// Owns the one decoded buffer; members are ranges into it, so looking a
/// member up never copies. Duplicate names: the **last** occurrence wins
/// (as in the reference runtime's map assignment and Python's `tarfile`),
/// the earlier body is dropped and a warning names the path.
#[derive(Clone, Debug, Default)]
pub struct Archive {
    data: SharedBytes,
    members: Vec<Member>,
    /// By exact name bytes: names that differ only in bytes that are not
    /// UTF-8 are different members.
    index: HashMap<Box<[u8]>, usize>,
    encoding: Option<Encoding>,
    warnings: Vec<String>,
}

impl Member {
    /// The name exactly as the tar holds it.
    pub fn name_bytes(&self) -> &[u8] {
        self.raw_name.as_deref().unwrap_or(self.name.as_bytes())
    }
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
        Archive::decode_passing(window, inflate_limit, max_members, None)
    }

    /// As [`Archive::decode_with`], telling `front` how far the decoder has
    /// read the window, so that its owner can release what was read. A
    /// payload of at least [`STREAM_MIN`] bytes is then inflated as a
    /// stream, a chunk at a time, instead of in one call that needs the
    /// whole window resident until it returns.
    pub(crate) fn decode_passing(
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
                SharedBytes::new(copy_passing(window, front)?),
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

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
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

    pub fn encoding(&self) -> Option<Encoding> {
        self.encoding
    }

    /// Non-fatal findings: duplicate names, non-zero padding, a missing end marker.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

/// The decoder the loader uses, alone: inflates a gzip payload window (as
/// [`Archive::decode`] does before walking the tar). Benchmarks measure the
/// loader against it.
pub fn inflate_payload(
    window: &[u8],
    limit: u64,
) -> Result<(SharedBytes, Encoding), ContainerError> {
    inflate(window, limit, None)
}

/// Inflates gzip members into one buffer, stopping at the first byte
/// sequence after a member that is not another gzip header.
///
/// The deflate body is decoded straight into the spare capacity of the one
/// output buffer (`Decompress::decompress_vec`), which grows by doubling up
/// to the limit: nothing is zero-filled ahead of the decoder and nothing is
/// copied, so peak memory stays at the inflated size (a `read_to_end` over a
/// decoder zero-fills ever larger stretches of spare capacity, which cost
/// about half the payload again on multi-GiB NEFFs).
fn inflate(
    window: &[u8],
    limit: u64,
    front: Option<&ReadFront<'_>>,
) -> Result<(SharedBytes, Encoding), ContainerError> {
    let stream = || inflate_stream(window, limit, front).map(|(v, e)| (SharedBytes::new(v), e));
    if front.is_some() && window.len() as u64 >= STREAM_MIN {
        return stream();
    }
    #[cfg(feature = "libdeflate")]
    if let Some(done) = inflate_fast(window, limit) {
        return done;
    }
    stream()
}

/// Payload windows at least this large are inflated as a stream when their
/// pages can be released behind the decoder ([`super::open_mapped`]): peak
/// memory is then the inflated size instead of the window plus it. zlib-rs
/// spends about 25 % more user time than libdeflate's one call on
/// incompressible weights, but a mapped file saves the copy and the faults
/// of reading it: whole `neffld load` processes of 512 MiB of such weights
/// took 0.82× the CPU, of 64 MiB 0.99× (docs/performance.md, change 16).
/// Below this, the one call is kept for its speed per byte.
pub const STREAM_MIN: u64 = 64 << 20;

/// Window bytes handed to the streaming decoder per call: large enough that
/// the per-call cost (zlib keeps a copy of the last 32 KiB of output) is
/// negligible, small enough that little of the window stays resident ahead
/// of a release.
const STREAM_CHUNK: usize = 4 << 20;

/// A raw-tar window copied into the archive's buffer, a chunk at a time so
/// that what was copied can be released.
fn copy_passing(window: &[u8], front: Option<&ReadFront<'_>>) -> Result<Vec<u8>, ContainerError> {
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

/// The fast path reserves this multiple of the window. Real NEFFs inflate
/// 5.8× to 9.3×; a tighter buffer stays below the allocator's mmap
/// threshold for small NEFFs, so repeated loads reuse warm memory instead of
/// page-faulting a fresh mapping (measured: 4.7 ms against 7.9 ms for
/// matmul_large). Payloads that inflate further take the streaming path.
#[cfg(feature = "libdeflate")]
const FAST_PATH_RATIO: u64 = 16;

/// The fast path decodes into huge pages ([`crate::host_pages::HugeBuf`]) only
/// when the payload is expected to inflate at least this many times over.
/// Huge pages against 4 KiB ones, medians of whole processes run in pairs:
/// reading matmul_large (6.1×) and decoding it in one call 0.71× (30
/// pairs), `neffld load` of 256 MiB of a repeating pattern (75×) 0.39× (15
/// pairs), but of 512 MiB of random weights (0.95×) 1.12× (7 pairs): when
/// the decoder writes at copy speed, zeroing a 2 MiB page ahead of it costs
/// more than the faults it saves. Real NEFFs inflate 5.8–9.3×; weights that do not
/// compress keep 4 KiB pages.
#[cfg(feature = "libdeflate")]
const HUGE_MIN_RATIO: usize = 2;

/// Nor for payloads expected to inflate to less than this: the gain was
/// measured from 9.3 MB (matmul_large) up, where most of the buffer is
/// whole huge pages.
#[cfg(feature = "libdeflate")]
const HUGE_MIN: usize = 4 << 20;

/// Largest buffer the fast path reserves; bigger payloads stream.
#[cfg(feature = "libdeflate")]
const FAST_PATH_MAX: u64 = 8 << 30;

/// The fast path: libdeflate decodes the first member in one call into a
/// buffer of [`FAST_PATH_RATIO`] × the window; it checks CRC-32 and ISIZE
/// itself and reports where the member ends. `None` hands the payload to
/// [`inflate_stream`]: a payload that does not fit (decoding it again in
/// bigger buffers would repeat the work), a header the streaming path must
/// judge, bad data (which that path reports precisely), and multi-member
/// streams.
#[cfg(feature = "libdeflate")]
fn inflate_fast(
    window: &[u8],
    limit: u64,
) -> Option<Result<(SharedBytes, Encoding), ContainerError>> {
    use super::fast_inflate::{Decompressor, Outcome};
    gzip_header_len(window).ok()?;
    let cap = limit.saturating_add(1);
    let ratio_guess = (window.len() as u64)
        .saturating_mul(FAST_PATH_RATIO)
        .saturating_add(1 << 16);
    let hint = isize_hint(window);
    let guess = hint
        .filter(|&h| h > ratio_guess)
        .map_or(ratio_guess, |h| h.saturating_add(1 << 16))
        .min(cap);
    if guess > FAST_PATH_MAX {
        return None;
    }
    let guess = usize::try_from(guess).ok()?;
    // A hint below the window's own length is a misread trailer (see
    // `isize_hint`): expect the whole guess then.
    let expected = hint
        .filter(|&h| h >= window.len() as u64)
        .map_or(guess, |h| usize::try_from(h).unwrap_or(guess));
    let mut d = Decompressor::new()?;
    // Into huge pages when the payload is compressible and large enough and
    // the host has them free, else into a `Vec`.
    let huge = (expected >= HUGE_MIN && expected / window.len().max(1) >= HUGE_MIN_RATIO)
        .then(|| crate::host_pages::HugeBuf::new(guess, expected))
        .flatten();
    let (outcome, data) = match huge {
        Some(mut buf) => {
            let (outcome, produced) = d.gzip_member_into(window, buf.room());
            buf.set_len(produced);
            (outcome, SharedBytes::new(buf))
        }
        None => {
            let mut out = Vec::new();
            out.try_reserve_exact(guess).ok()?;
            let outcome = d.gzip_member(window, &mut out);
            (outcome, SharedBytes::new(out))
        }
    };
    match outcome {
        Outcome::Done { consumed } => {
            if data.len() as u64 > limit {
                return Some(Err(ContainerError::InflateLimit { limit }));
            }
            let rest = &window[consumed..];
            if rest.len() >= 3 && rest[..3] == GZIP_MAGIC {
                return None;
            }
            let encoding = Encoding::Gzip {
                members: 1,
                trailing: rest.len() as u64,
                nonzero_trailing: rest.iter().any(|&b| b != 0),
            };
            Some(Ok((data, encoding)))
        }
        Outcome::NoRoom if guess as u64 >= cap => Some(Err(ContainerError::InflateLimit { limit })),
        Outcome::NoRoom | Outcome::Bad => None,
    }
}

/// The inflated size a payload that inflates beyond [`FAST_PATH_RATIO`] ×
/// declares in its gzip trailer, so the fast path can take it too (2 GiB of
/// compressible weights inflate 80×; the streaming path took 1.8× as long as
/// one libdeflate call). The member's end is not known before decoding
/// (zero padding may follow it), so this reads ISIZE as if the member ended
/// just after the last non-zero byte. That is right whenever ISIZE's top
/// byte is non-zero (16 MiB and more, mod 4 GiB); a wrong guess only sizes
/// the buffer (a value beyond deflate's 1032:1 ceiling is dropped, one too
/// small makes libdeflate stop and the payload streams).
fn isize_hint(window: &[u8]) -> Option<u64> {
    let end = window.iter().rposition(|&b| b != 0)? + 1;
    let isize = u32::from_le_bytes(window.get(end.checked_sub(4)?..end)?.try_into().ok()?);
    let isize = u64::from(isize);
    (isize <= (window.len() as u64).saturating_mul(1032)).then_some(isize)
}

/// The streaming path (flate2): every member, with precise errors.
fn inflate_stream(
    window: &[u8],
    limit: u64,
    front: Option<&ReadFront<'_>>,
) -> Result<(Vec<u8>, Encoding), ContainerError> {
    // Real payloads inflate about 6x; start near that and double as needed,
    // or at the size the trailer declares when that is larger (reserving
    // touches nothing; should the reservation fail, the smaller one is tried).
    let cap = limit.saturating_add(1);
    let ratio_guess = (window.len() as u64)
        .saturating_mul(8)
        .min(cap)
        .min(1 << 34);
    let mut out = Vec::new();
    let hinted = isize_hint(window)
        .filter(|&h| h > ratio_guess)
        .map(|h| h.saturating_add(1 << 16).min(cap))
        .is_some_and(|h| reserve(&mut out, h).is_ok());
    if !hinted {
        reserve(&mut out, ratio_guess)?;
    }
    let mut pos = 0usize;
    let mut members = 0u32;
    loop {
        members += 1;
        let input = Input {
            bytes: &window[pos..],
            base: pos,
            front,
        };
        pos += inflate_member(input, &mut out, limit).map_err(|detail| match detail {
            MemberError::Limit => ContainerError::InflateLimit { limit },
            MemberError::Oom(size) => ContainerError::OutOfMemory {
                what: "inflated payload".into(),
                size,
            },
            MemberError::Bad(detail) => ContainerError::Gzip {
                member: members,
                offset: pos as u64,
                detail,
            },
        })?;
        let rest = &window[pos..];
        if rest.len() < 3 || rest[..3] != GZIP_MAGIC {
            break;
        }
    }
    let rest = &window[pos..];
    let encoding = Encoding::Gzip {
        members,
        trailing: rest.len() as u64,
        nonzero_trailing: rest.iter().any(|&b| b != 0),
    };
    if let Some(f) = front {
        f.passed(Reader::Decode, window.len());
    }
    Ok((out, encoding))
}

enum MemberError {
    Limit,
    Oom(u64),
    Bad(String),
}

fn reserve(out: &mut Vec<u8>, additional: u64) -> Result<(), ContainerError> {
    let n = usize::try_from(additional).unwrap_or(usize::MAX);
    out.try_reserve_exact(n)
        .map_err(|_| ContainerError::OutOfMemory {
            what: "inflated payload".into(),
            size: additional,
        })
}

const TRUNCATED: &str = "truncated gzip input";

/// Length of the RFC 1952 member header at the start of `b`.
fn gzip_header_len(b: &[u8]) -> Result<usize, MemberError> {
    let bad = |s: &str| MemberError::Bad(s.to_string());
    if b.len() < 10 {
        return Err(bad(TRUNCATED));
    }
    if b[..3] != GZIP_MAGIC {
        return Err(bad("gzip decompression failed: invalid gzip header"));
    }
    let flg = b[3];
    if flg & 0xE0 != 0 {
        return Err(bad(
            "gzip decompression failed: reserved header flag bits are set",
        ));
    }
    let mut p = 10usize;
    if flg & 0x04 != 0 {
        let x = b.get(p..p + 2).ok_or_else(|| bad(TRUNCATED))?;
        p += 2 + usize::from(u16::from_le_bytes([x[0], x[1]]));
    }
    for bit in [0x08, 0x10] {
        if flg & bit != 0 {
            let nul = b
                .get(p..)
                .and_then(|r| r.iter().position(|&c| c == 0))
                .ok_or_else(|| bad(TRUNCATED))?;
            p += nul + 1;
        }
    }
    if flg & 0x02 != 0 {
        let stored = b.get(p..p + 2).ok_or_else(|| bad(TRUNCATED))?;
        let mut crc = flate2::Crc::new();
        crc.update(&b[..p]);
        if u16::from_le_bytes([stored[0], stored[1]]) != crc.sum() as u16 {
            return Err(bad("gzip decompression failed: header CRC mismatch"));
        }
        p += 2;
    }
    if p > b.len() {
        return Err(bad(TRUNCATED));
    }
    Ok(p)
}

/// The rest of a window from one member on, and where it sits in the window.
struct Input<'w, 'f> {
    bytes: &'w [u8],
    /// Offset of `bytes` in the window.
    base: usize,
    front: Option<&'f ReadFront<'f>>,
}

/// Decodes one gzip member from the start of `input`, appending to `out`;
/// returns the bytes of `input` it consumed (header, body, trailer). The
/// deflate body is fed [`STREAM_CHUNK`] bytes per call and the CRC-32 taken
/// over each call's output while it is in cache; after each call the front
/// is told what the decoder has consumed.
fn inflate_member(
    input: Input<'_, '_>,
    out: &mut Vec<u8>,
    limit: u64,
) -> Result<usize, MemberError> {
    use flate2::{Decompress, FlushDecompress, Status};
    let Input {
        bytes: input,
        base,
        front,
    } = input;
    let header = gzip_header_len(input)?;
    let start = out.len();
    let mut crc = flate2::Crc::new();
    let mut d = Decompress::new(false);
    loop {
        if out.len() == out.capacity() {
            if out.len() as u64 > limit {
                return Err(MemberError::Limit);
            }
            let room = limit.saturating_add(1) - out.len() as u64;
            let grow = (out.len() as u64).max(1 << 20).min(room);
            let n = usize::try_from(grow).map_err(|_| MemberError::Oom(grow))?;
            out.try_reserve_exact(n)
                .map_err(|_| MemberError::Oom(grow))?;
        }
        let consumed = header + d.total_in() as usize;
        let chunk_end = consumed.saturating_add(STREAM_CHUNK).min(input.len());
        let before = (d.total_in(), out.len());
        let status = d
            .decompress_vec(&input[consumed..chunk_end], out, FlushDecompress::None)
            .map_err(|e| MemberError::Bad(format!("gzip decompression failed: {e}")))?;
        crc.update(&out[before.1..]);
        if let Some(f) = front {
            f.passed(Reader::Decode, base + header + d.total_in() as usize);
        }
        if out.len() as u64 > limit {
            return Err(MemberError::Limit);
        }
        match status {
            Status::StreamEnd => break,
            _ if (d.total_in(), out.len()) == before && out.len() < out.capacity() => {
                return Err(MemberError::Bad(TRUNCATED.into()));
            }
            _ => {}
        }
    }
    let body_end = header + d.total_in() as usize;
    let trailer = input
        .get(body_end..body_end + 8)
        .ok_or_else(|| MemberError::Bad(TRUNCATED.into()))?;
    let stored_crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let stored_len = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
    if stored_crc != crc.sum() {
        return Err(MemberError::Bad(format!(
            "gzip decompression failed: CRC-32 mismatch (stored {stored_crc:#010x}, computed {:#010x})",
            crc.sum()
        )));
    }
    if stored_len != (out.len() - start) as u32 {
        return Err(MemberError::Bad(format!(
            "gzip decompression failed: ISIZE mismatch (stored {stored_len}, decoded {})",
            out.len() - start
        )));
    }
    Ok(body_end + 8)
}

struct Walk {
    members: Vec<Member>,
    warnings: Vec<String>,
}

/// Overrides carried by pax or GNU metadata entries for the next entry.
#[derive(Default, Clone)]
struct Overrides {
    path: Option<Vec<u8>>,
    size: Option<u64>,
}

fn walk_tar(data: &[u8], max_members: u64) -> Result<Walk, ContainerError> {
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
    use crate::container::writer::{pax_record, tar_entry, TarEntry, TarFormat};
    use crate::NrtStatus;

    fn tar(entries: &[TarEntry]) -> Vec<u8> {
        let mut v = Vec::new();
        for e in entries {
            v.extend_from_slice(&tar_entry(e));
        }
        v.extend_from_slice(&[0u8; 1024]);
        v
    }

    /// A name that is not UTF-8 is kept as the tar's bytes: two names that
    /// differ only in such bytes are two members, not a duplicate.
    #[test]
    fn names_that_are_not_utf8_keep_their_bytes() {
        let data = tar(&[
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
        let data = tar(&[
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
        let data = tar(&[
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
        let data = tar(&[
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
        let data = tar(&[
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
        let a = Archive::from_tar(tar(&[g, x, f])).unwrap();
        assert_eq!(a.get("f").unwrap().len(), 300);
        assert_eq!(a.len(), 1);
    }

    #[test]
    fn base256_size() {
        let mut f = TarEntry::file("big", &[3u8; 10]);
        f.base256_size = true;
        let a = Archive::from_tar(tar(&[f])).unwrap();
        assert_eq!(a.get("big"), Some(&[3u8; 10][..]));
    }

    #[test]
    fn the_member_ceiling_counts_every_entry() {
        // A pax header counts as an entry although it names no member.
        let mut x = TarEntry::file("PaxHeader/a", &pax_record("path", "long/a"));
        x.typeflag = b'x';
        let data = tar(&[x, TarEntry::file("a", b"1"), TarEntry::file("b", b"2")]);
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
            "the NEFF payload has more than 0 tar entries (the one at offset 0x0 is past the ceiling; NEFFLD_MAX_MEMBERS raises it)"
        );
    }

    #[test]
    fn links_are_empty_members() {
        let mut l = TarEntry::file("link", b"");
        l.typeflag = b'2';
        let a = Archive::from_tar(tar(&[l])).unwrap();
        assert_eq!(a.member("link").unwrap().kind, MemberKind::Special(b'2'));
        assert_eq!(a.get("link"), Some(&b""[..]));
    }

    #[test]
    fn bad_checksum_names_the_offset() {
        let mut data = tar(&[TarEntry::file("a", b"x"), TarEntry::file("b", b"y")]);
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
        let mut data = tar(&[TarEntry::file("sg00/def.json", &[b'x'; 2000])]);
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
        let mut data = tar(&[TarEntry::file("a", b"x")]);
        data.truncate(1024 + 100);
        assert!(matches!(
            Archive::from_tar(data).unwrap_err(),
            ContainerError::TarTruncated { offset: 1024, .. }
        ));
        let mut data = tar(&[TarEntry::file("a", b"x")]);
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
        let t1 = tar(&[TarEntry::file("a", b"1")]);
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
        let t = tar(&[TarEntry::file("a", &[9u8; 5000])]);
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

    /// Both decoders produce the same bytes and the same account of the
    /// window on every real fixture.
    #[cfg(feature = "libdeflate")]
    #[test]
    fn the_fast_and_streaming_paths_agree_on_the_fixtures() {
        let all = crate::testkit::real_fixtures();
        let mut seen = 0;
        for (name, bytes) in all {
            if bytes.len() < 1024 {
                continue;
            }
            let w = &bytes[1024..];
            let fast = inflate_fast(w, 1 << 30)
                .expect("a fixture takes the fast path")
                .unwrap();
            let slow = inflate_stream(w, 1 << 30, None).unwrap();
            assert!(fast.0[..] == slow.0[..], "{name}");
            assert_eq!(fast.1, slow.1, "{name}");
            seen += 1;
        }
        assert_eq!(seen, 12);
        // The fast path declines damaged data and second members.
        let t = tar(&[TarEntry::file("a", &[1u8; 3000])]);
        let mut z = crate::container::writer::gzip(&t, 1);
        let two = [z.clone(), z.clone()].concat();
        assert!(inflate_fast(&two, 1 << 20).is_none());
        z[20] ^= 0xFF;
        assert!(inflate_fast(&z, 1 << 20).is_none() || inflate_fast(&z, 1 << 20).unwrap().is_err());
        // A payload that outgrows the fast path's buffer streams instead;
        // one that outgrows the limit within it stops there.
        let bomb = crate::container::writer::gzip(&vec![0u8; 4 << 20], 9);
        assert!(inflate_fast(&bomb, 1 << 30).is_none());
        assert!(matches!(
            inflate_fast(&bomb, 1000),
            Some(Err(ContainerError::InflateLimit { limit: 1000 }))
        ));
        assert!(matches!(
            inflate(&bomb, 1 << 20, None),
            Err(ContainerError::InflateLimit { .. })
        ));
    }

    /// What a decode returned, comparable across decoders: the bytes and
    /// the account of the window, or the error's full text.
    type Seen = Result<(Vec<u8>, Encoding), String>;

    fn outcome(r: Result<(Vec<u8>, Encoding), ContainerError>) -> Seen {
        r.map_err(|e| format!("{e} [{:?}]", e.status()))
    }

    /// The streaming decode with a front (what a mapped load of a large
    /// payload runs), and the ends it reported to the release function.
    fn stream_released(w: &[u8], limit: u64) -> (Seen, Vec<usize>) {
        let ends = std::sync::Mutex::new(Vec::new());
        let r = {
            let rel = |end: usize| ends.lock().unwrap().push(end);
            let front = ReadFront::new(&rel, w.len(), false);
            outcome(inflate_stream(w, limit, Some(&front)))
        };
        (r, ends.into_inner().unwrap())
    }

    /// The streaming path that releases the window behind it decodes the
    /// same bytes, and fails with the same error, as the default decoder
    /// (libdeflate's one call where it succeeds): on every real fixture and
    /// on a payload of several chunks damaged in each way the decoders
    /// tell apart. It releases in order, up to the whole window on success,
    /// and never past what it has consumed.
    #[test]
    fn the_released_stream_agrees_with_the_one_shot_decoder() {
        use crate::container::writer::gzip;
        let mut cases: Vec<(String, Vec<u8>, u64)> = crate::testkit::real_fixtures()
            .into_iter()
            .filter(|(_, b)| b.len() > 1024)
            .map(|(n, b)| (n.to_string(), b[1024..].to_vec(), 1 << 30))
            .collect();
        assert_eq!(cases.len(), 12);
        // Three chunks and a bit of barely compressible bytes, zero-padded.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let body: Vec<u8> = (0..(3 * STREAM_CHUNK + 12345) / 8)
            .flat_map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x & 0x3f3f_3f3f_3f3f_3f3f).to_le_bytes()
            })
            .collect();
        let t = tar(&[TarEntry::file("sg00/w.npy", &body)]);
        let z = gzip(&t, 1);
        assert!(z.len() > 2 * STREAM_CHUNK, "{}", z.len());
        let n = z.len();
        let padded = [z.clone(), vec![0u8; 7000]].concat();
        cases.push(("large".into(), padded.clone(), 1 << 30));
        cases.push((
            "large, two members".into(),
            [z.clone(), z.clone()].concat(),
            1 << 30,
        ));
        cases.push((
            "large, garbage after".into(),
            [z.clone(), b"junk".to_vec()].concat(),
            1 << 30,
        ));
        cases.push((
            "large, over the limit".into(),
            padded.clone(),
            t.len() as u64 - 1,
        ));
        for cut in [
            5,
            11,
            STREAM_CHUNK,
            STREAM_CHUNK + 1,
            2 * STREAM_CHUNK + 3,
            n - 8,
            n - 1,
        ] {
            cases.push((format!("large, cut at {cut}"), z[..cut].to_vec(), 1 << 30));
        }
        for (what, at) in [
            ("body", STREAM_CHUNK + 100),
            ("CRC", n - 6),
            ("ISIZE", n - 2),
        ] {
            let mut bad = padded.clone();
            bad[at] ^= 0x5a;
            cases.push((format!("large, {what} damaged"), bad, 1 << 30));
        }
        for (name, w, limit) in cases {
            let one_shot = outcome(inflate(&w, limit, None).map(|(d, e)| (d.to_vec(), e)));
            let (streamed, ends) = stream_released(&w, limit);
            match (&one_shot, &streamed) {
                (Ok(a), Ok(b)) => {
                    assert!(a.0 == b.0, "{name}: bytes differ");
                    assert_eq!(a.1, b.1, "{name}");
                    assert_eq!(ends.last(), Some(&w.len()), "{name}");
                }
                _ => assert_eq!(one_shot, streamed, "{name}"),
            }
            assert!(ends.windows(2).all(|e| e[0] < e[1]), "{name}: {ends:?}");
            assert!(ends.iter().all(|&e| e <= w.len()), "{name}");
            if name.starts_with("large") && one_shot.is_ok() {
                assert!(ends.len() >= 3, "{name}: released chunk by chunk: {ends:?}");
            }
        }
    }

    /// With a front, a large window takes the stream; a raw tar is copied
    /// chunk by chunk with the same report.
    #[test]
    fn a_released_window_from_the_threshold_up_streams() {
        let ends = std::sync::Mutex::new(Vec::new());
        let raw = tar(&[TarEntry::file("a", &vec![5u8; 2 * STREAM_CHUNK])]);
        {
            let rel = |end: usize| ends.lock().unwrap().push(end);
            let front = ReadFront::new(&rel, raw.len(), false);
            let a = Archive::decode_passing(&raw, 1 << 30, 10, Some(&front)).unwrap();
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
        let t = tar(&[TarEntry::file("a", b"payload")]);
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

    /// A payload that inflates beyond the fast path's ratio is sized from
    /// its gzip trailer (exactly, from 16 MiB up, padding or not), and
    /// decodes to its bytes whether the guess was right or not.
    #[cfg(feature = "libdeflate")]
    #[test]
    fn a_payload_beyond_the_fast_ratio_is_sized_from_its_trailer() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        for (len, pad) in [
            (20usize << 20, 0usize),
            (20 << 20, 3000),
            ((16 << 20) - 5, 100),
        ] {
            let body: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(&body).unwrap();
            let mut window = enc.finish().unwrap();
            window.resize(window.len() + pad, 0);
            assert!(len as u64 > window.len() as u64 * FAST_PATH_RATIO);
            if len >= 16 << 20 {
                assert_eq!(isize_hint(&window), Some(len as u64));
            }
            let (out, _) = inflate_payload(&window, 1 << 30).unwrap();
            assert!(out[..] == body[..], "{len} bytes, {pad} of padding");
        }
    }
}
