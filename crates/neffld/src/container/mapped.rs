//! A NEFF file mapped into memory, whose pages can be dropped once read.
//!
//! Why a mapping: reading a large NEFF into a buffer keeps the whole file
//! resident (and copied once) until the load ends, next to its inflated
//! payload. Mapped, the file's pages are the page cache's; the loader drops
//! them from this process as the decoder passes them
//! ([`super::open_mapped`]), so a load peaks at about the inflated size.
//!
//! The pages holding the parse cache's key sample ([`super::sample`]) are
//! kept: the load reads them again after the decode, and each would fault
//! back a whole page-cache folio.
//!
//! The mapping is private and read-only: nothing here ever writes to it, so
//! a dropped page that is touched again (the header, the cache key's
//! samples) reads back from the file. What another process does to the file
//! meanwhile is the mapping's usual contract, spelled out in
//! docs/decisions.md: bytes written to the file may show through, and
//! touching a page past a shortened end raises `SIGBUS`.

use std::fs::File;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use memmap2::{Mmap, MmapOptions, UncheckedAdvice};

/// Released ranges end on a multiple of this: 64 KiB is a multiple of every
/// Linux page size (4, 16 or 64 KiB), so no page-size query is needed, and
/// at most this much of what was read stays resident.
pub const RELEASE_ALIGN: usize = 64 << 10;

/// A whole file, mapped private and read-only.
pub struct MappedFile {
    map: Mmap,
    /// Everything below this offset has been released, but `keep`.
    dropped: AtomicUsize,
    /// Blocks never released (sorted, disjoint, [`RELEASE_ALIGN`]-aligned).
    keep: Vec<Range<usize>>,
}

impl MappedFile {
    /// Maps `file` as it is now (a later change of its length is not seen).
    pub fn map(file: &File) -> std::io::Result<MappedFile> {
        // SAFETY: the mapping is read-only and private (MAP_PRIVATE), and
        // only `bytes` hands it out, as an immutable borrow of `self`. Its
        // length is the file's length now, so every page is inside the file
        // unless another process shortens the file, which Rust cannot guard
        // against; that case (SIGBUS on touching a page past the new end) is
        // documented in docs/decisions.md.
        let map = unsafe { MmapOptions::new().map_copy_read_only(file)? };
        // Page tables only: a page-cache folio mapped whole by one PMD is
        // unmapped whole when part of it is released, kept pages included.
        #[cfg(target_os = "linux")]
        if let Err(e) = map.advise(memmap2::Advice::NoHugePage) {
            tracing::debug!("MADV_NOHUGEPAGE on the mapped NEFF failed: {e}");
        }
        let mut keep: Vec<Range<usize>> = Vec::new();
        for r in super::sample::ranges(map.len()) {
            let block = r.start / RELEASE_ALIGN * RELEASE_ALIGN
                ..r.end.div_ceil(RELEASE_ALIGN) * RELEASE_ALIGN;
            match keep.last_mut() {
                Some(last) if last.end >= block.start => last.end = last.end.max(block.end),
                _ => keep.push(block),
            }
        }
        Ok(MappedFile {
            map,
            dropped: AtomicUsize::new(0),
            keep,
        })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Drops the pages below file offset `end` from this process (whole
    /// [`RELEASE_ALIGN`] blocks; the rest stays, and so do the blocks of the
    /// cache key's sample). They stay valid: touching one again reads it
    /// back from the file.
    pub fn release_below(&self, end: usize) {
        let end = end.min(self.map.len()) / RELEASE_ALIGN * RELEASE_ALIGN;
        let start = self.dropped.fetch_max(end, Ordering::AcqRel);
        if end <= start {
            return;
        }
        let mut at = start;
        for k in self.keep.iter().filter(|k| k.end > start && k.start < end) {
            self.drop_pages(at..k.start.max(at));
            at = at.max(k.end);
        }
        self.drop_pages(at..end.max(at));
    }

    fn drop_pages(&self, range: Range<usize>) {
        if range.is_empty() {
            return;
        }
        // SAFETY: `range` lies inside the mapping and its ends are multiples
        // of RELEASE_ALIGN, so of every Linux page size. For a private
        // mapping that was never written, MADV_DONTNEED only unmaps the
        // pages; the next access faults them in again from the file, so
        // every borrow of `bytes` still reads the same bytes.
        let advised = unsafe {
            self.map
                .unchecked_advise_range(UncheckedAdvice::DontNeed, range.start, range.len())
        };
        // Advice that fails leaves the pages resident: memory, not correctness.
        if let Err(e) = advised {
            tracing::debug!("MADV_DONTNEED on the mapped NEFF failed: {e}");
        }
    }

    /// Bytes of this mapping resident in this process (the mapping's `Rss`
    /// in `/proc/self/smaps`); `None` where that file cannot be read.
    /// Tests and measurements use it to see what was released.
    pub fn resident_bytes(&self) -> Option<u64> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let start = format!("{:x}-", self.map.as_ptr() as usize);
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&start));
        lines.next()?;
        let rss = lines.find_map(|l| l.strip_prefix("Rss:"))?;
        let kib: u64 = rss.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib << 10)
    }
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFile")
            .field("len", &self.map.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn released_pages_read_back_the_file_and_the_key_sample_stays() {
        // A file of our own, unlinked at once: gone when closed.
        let path = std::env::temp_dir().join(format!("neffld-mapped-{}", std::process::id()));
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        let len = 200 * RELEASE_ALIGN + 123;
        let body: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        f.write_all(&body).unwrap();
        let m = MappedFile::map(&f).unwrap();
        assert!(m.bytes() == body);
        let all = m.resident_bytes().unwrap();
        assert!(all >= len as u64, "{all}");
        let kept = |below: usize| -> usize {
            m.keep
                .iter()
                .map(|k| k.end.min(below).saturating_sub(k.start))
                .sum()
        };
        assert!(kept(len) < len / 2, "{:?}", m.keep);
        m.release_below(10 * RELEASE_ALIGN + 5);
        let dropped = 10 * RELEASE_ALIGN - kept(10 * RELEASE_ALIGN);
        assert_eq!(m.resident_bytes(), Some(all - dropped as u64));
        m.release_below(3);
        m.release_below(usize::MAX);
        // Every whole block but the kept ones; the partial block at the end stays.
        let dropped = 200 * RELEASE_ALIGN - kept(200 * RELEASE_ALIGN);
        assert_eq!(m.resident_bytes(), Some(all - dropped as u64));
        // The cache key's bytes are still mapped: reading them faults nothing.
        let key = super::super::sample::gather(m.bytes());
        assert_eq!(key, super::super::sample::gather(&body));
        assert_eq!(m.resident_bytes(), Some(all - dropped as u64));
        assert!(m.bytes() == body, "dropped pages fault back from the file");
        assert_eq!(m.resident_bytes(), Some(all));
    }
}
