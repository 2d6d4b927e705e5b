//! The payload window's gzip decoding (RFC 1952), into one buffer.
//!
//! Real producers pad the gzip member with zeros up to a multiple of 10240
//! bytes, so after a member ends the decoder continues only if another gzip
//! header follows and ignores every other trailing byte (a strict
//! multi-member decoder rejects every real NEFF). Two decoders give the same
//! bytes and errors: libdeflate's one call ([`super::fast_inflate`]) for
//! payloads that fit its buffer, and a streaming zlib decoder for the rest
//! and for windows released behind the decoder as it reads them.

use super::release::{ReadFront, Reader};
use super::ContainerError;
use crate::shared::SharedBytes;

pub(super) const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];

/// How the window was encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// gzip: number of members decoded, bytes after the last member, and
    /// whether any of them was non-zero (real producers pad with zeros).
    Gzip {
        /// Gzip members decoded.
        members: u32,
        /// Bytes after the last member.
        trailing: u64,
        /// Whether any of them is not zero.
        nonzero_trailing: bool,
    },
    /// A raw tar (the pkg 1 form).
    RawTar,
}

/// The decoder the loader uses, alone: inflates a gzip payload window (as
/// [`Archive::decode`] does before walking the tar). Benchmarks measure the
/// loader against it.
#[cfg(any(test, feature = "testkit"))]
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
pub(super) fn inflate(
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
pub(super) const STREAM_CHUNK: usize = 4 << 20;

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
    // Real payloads inflate about 6x: reserve about 8x the window, or the
    // size the trailer declares when that is larger (reserving touches
    // nothing). Under a host memory limit that much address space may not
    // be had though the payload needs far less, so smaller reservations
    // are tried in turn (the trailer's size, then 1 MiB); the decoder grows
    // the buffer as the bytes arrive.
    let cap = limit.saturating_add(1);
    let ratio_guess = (window.len() as u64)
        .saturating_mul(8)
        .min(cap)
        .min(1 << 34);
    let hint = isize_hint(window).map(|h| h.saturating_add(1 << 16).min(cap));
    let mut tries = vec![ratio_guess.max(hint.unwrap_or(0)), hint.unwrap_or(0), (1 << 20).min(cap)];
    tries.retain(|&n| n > 0);
    tries.dedup();
    let mut out = Vec::new();
    let mut reserved = Ok(());
    for n in tries {
        reserved = reserve(&mut out, n);
        if reserved.is_ok() {
            break;
        }
    }
    reserved?;
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

pub(super) fn reserve(out: &mut Vec<u8>, additional: u64) -> Result<(), ContainerError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::writer::{tar_of, TarEntry};

    /// The real fixtures' bytes, by name (what the testkit crate's
    /// `real_fixtures` reads; a unit test of the library cannot use it).
    fn real_fixtures() -> Vec<(String, Vec<u8>)> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/fixtures");
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "neff"))
            .map(|p| {
                let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                (p.file_name().unwrap().to_string_lossy().into(), bytes)
            })
            .collect();
        v.sort();
        v
    }

    /// Both decoders produce the same bytes and the same account of the
    /// window on every real fixture.
    #[cfg(feature = "libdeflate")]
    #[test]
    fn the_fast_and_streaming_paths_agree_on_the_fixtures() {
        let all = real_fixtures();
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
        let t = tar_of(&[TarEntry::file("a", &[1u8; 3000])]);
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
        let mut cases: Vec<(String, Vec<u8>, u64)> = real_fixtures()
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
        let t = tar_of(&[TarEntry::file("sg00/w.npy", &body)]);
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
