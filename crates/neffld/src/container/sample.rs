//! The bytes of a NEFF that the parse cache's cheap key reads: the first
//! and last KiB and 64 bytes at each of 62 evenly spaced points between
//! (at most 6 KiB, whatever the length; a shorter buffer is read whole).
//!
//! They are named here, beside the file mapping, because a mapped file
//! keeps these pages when it releases the rest: read again after release,
//! each would fault back a whole page-cache folio (up to 2 MiB each,
//! 40–60 MiB in all measured on a 70 MB and a 566 MB NEFF), next to the
//! inflated payload.

use std::ops::Range;

const EDGE: usize = 1024;
const POINTS: usize = 62;
const PIECE: usize = 64;

/// Where the key's bytes are, in order, for a buffer of `len` bytes.
pub fn ranges(len: usize) -> Vec<Range<usize>> {
    if len <= 2 * EDGE + POINTS * PIECE {
        return std::iter::once(0..len).collect();
    }
    let span = len - 2 * EDGE - PIECE;
    let mut out = Vec::with_capacity(POINTS + 2);
    out.push(0..EDGE);
    out.extend((0..POINTS).map(|i| {
        let at = EDGE + span * (i + 1) / (POINTS + 1);
        at..at + PIECE
    }));
    out.push(len - EDGE..len);
    out
}

/// The key's bytes of `bytes`, concatenated.
pub fn gather(bytes: &[u8]) -> Vec<u8> {
    ranges(bytes.len())
        .into_iter()
        .flat_map(|r| &bytes[r])
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_buffers_are_read_whole_and_large_ones_in_64_pieces() {
        let whole = ranges(100);
        assert_eq!((whole.len(), &whole[0]), (1, &(0..100)));
        let r = ranges(1 << 20);
        assert_eq!(r.len(), 64);
        assert_eq!(r[0], 0..1024);
        assert_eq!(r[63], (1 << 20) - 1024..1 << 20);
        assert!(r.windows(2).all(|w| w[0].end <= w[1].start));
        let bytes: Vec<u8> = (0..1 << 20).map(|i| (i % 241) as u8).collect();
        let g = gather(&bytes);
        assert_eq!(g.len(), 2 * 1024 + 62 * 64);
        assert_eq!(&g[1024..1088], &bytes[r[1].clone()]);
    }
}
