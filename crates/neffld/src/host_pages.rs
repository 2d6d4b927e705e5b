//! How large host buffers get their pages. A one-shot load is dominated by
//! the decoder filling the inflated payload, and before these calls the
//! kernel took 29 % of a one-shot load's samples (`perf`, 200 loads of
//! matmul_large), most of it faulting in and zeroing that buffer 4 KiB at a
//! time; these calls let a buffer take its pages in fewer, larger steps.
//! Each is advice: a kernel that refuses it leaves the buffer to fault as
//! usual, and no byte of the buffer changes.

/// Elsewhere the pages fault as they fill.
#[cfg(not(target_os = "linux"))]
pub fn populate(_: &mut Vec<u8>) {}

/// Elsewhere a buffer is a `Vec`.
#[cfg(not(target_os = "linux"))]
pub enum HugeBuf {}

#[cfg(not(target_os = "linux"))]
impl HugeBuf {
    pub fn new(_: usize, _: usize) -> Option<HugeBuf> {
        None
    }

    pub fn room(&mut self) -> &mut [u8] {
        match *self {}
    }

    pub fn set_len(&mut self, _: usize) {
        match *self {}
    }
}

#[cfg(not(target_os = "linux"))]
impl AsRef<[u8]> for HugeBuf {
    fn as_ref(&self) -> &[u8] {
        match *self {}
    }
}

#[cfg(target_os = "linux")]
pub use linux::{populate, HugeBuf};

/// A buffer this long or longer that is filled once, whole, and then kept
/// (a core's instruction images) takes huge pages when the host has them
/// free. Placing 3.6 MB in six buffers of 4 KiB pages (populated in one
/// call each, then written and unmapped) took 1.47–1.76 ms a load in a
/// loop of 200, about 0.4 ms a MiB; the same bytes in two huge pages,
/// 0.24–0.35 ms, at most 0.18 ms a page. So from 1 MiB up a whole 2 MiB
/// page is the cheaper, whatever part of it is used.
const ZEROED_HUGE_MIN: usize = 1 << 20;

/// A buffer this long or longer that a loaded model keeps (its images, its
/// rings) is an anonymous mapping of its own rather than a heap block: it
/// goes back to the OS when the model is unloaded. From the heap, once the
/// allocator had raised its mapping threshold past such sizes (it does when
/// a larger block, the inflated payload, is freed), they were carved from
/// its arenas, and after 1,242 loads and unloads of matmul_large 3.4 GB
/// stayed resident.
const ZEROED_MAP_MIN: usize = 64 << 10;

/// `len` zero bytes to be written once and then shared: in huge pages from
/// [`ZEROED_HUGE_MIN`] up when the host has them free, else from
/// [`ZEROED_MAP_MIN`] up in an anonymous mapping, else in a `Vec`; pages
/// are faulted in one call. Reserved fallibly.
pub enum ZeroedBuf {
    Huge(HugeBuf),
    Mapped(memmap2::MmapMut),
    Plain(Vec<u8>),
}

impl ZeroedBuf {
    pub fn new(len: usize, what: &'static str) -> Result<ZeroedBuf, crate::fallible::HostOom> {
        if len >= ZEROED_HUGE_MIN {
            if let Some(mut b) = HugeBuf::new(len, len) {
                b.set_len(len);
                return Ok(ZeroedBuf::Huge(b));
            }
        }
        if len >= ZEROED_MAP_MIN {
            let m = memmap2::MmapMut::map_anon(len).map_err(|_| crate::fallible::HostOom {
                what,
                bytes: len as u64,
            })?;
            // Faulted in one call; an older kernel refuses, and the pages
            // then fault as they fill.
            #[cfg(target_os = "linux")]
            let _ = m.advise(memmap2::Advice::PopulateWrite);
            return Ok(ZeroedBuf::Mapped(m));
        }
        let mut v = crate::fallible::with_capacity(len, what)?;
        populate(&mut v);
        v.resize(len, 0);
        Ok(ZeroedBuf::Plain(v))
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            ZeroedBuf::Huge(b) => b.room(),
            ZeroedBuf::Mapped(m) => m,
            ZeroedBuf::Plain(v) => v,
        }
    }

    /// The bytes, now read-only and shareable.
    pub fn freeze(self) -> crate::shared::SharedBytes {
        match self {
            ZeroedBuf::Huge(b) => crate::shared::SharedBytes::new(b),
            ZeroedBuf::Mapped(m) => crate::shared::SharedBytes::new(m),
            ZeroedBuf::Plain(v) => crate::shared::SharedBytes::new(v),
        }
    }
}

/// A transparent huge page.
#[cfg(target_os = "linux")]
const HUGE: usize = 2 << 20;

/// The number of free huge-page-sized blocks `/proc/buddyinfo` lists, over
/// every node and zone but `DMA` (a few MiB the kernel keeps for old
/// devices). A block of order `o ≥ 9` (4 KiB pages) is `2^(o-9)` huge pages.
/// `None` when the text is not in the form the kernel writes.
pub fn free_huge_blocks(buddyinfo: &str) -> Option<u64> {
    let mut total = 0u64;
    let mut zones = 0;
    for line in buddyinfo.lines().filter(|l| !l.trim().is_empty()) {
        let (_, rest) = line.split_once("zone")?;
        let mut fields = rest.split_whitespace();
        let zone = fields.next()?;
        let counts: Vec<u64> = fields.map(|f| f.parse().ok()).collect::<Option<_>>()?;
        zones += 1;
        if zone == "DMA" {
            continue;
        }
        for (order, &n) in counts.iter().enumerate().skip(9) {
            total = total.saturating_add(n.saturating_mul(1 << (order - 9).min(32)));
        }
    }
    (zones > 0).then_some(total)
}

/// Whether `wanted` huge pages may be taken without the kernel compacting
/// memory to make them: the free blocks must cover them twice over, with
/// 64 (128 MiB) to spare for everyone else. With huge-page advice, a fault
/// that finds no free block compacts memory on the spot (THP `defrag` is
/// `madvise` by default), which stalled one load in sixty on a fragmented
/// host; a free block is handed over at once.
pub fn huge_pages_are_free(wanted: u64, free: u64) -> bool {
    free >= wanted.saturating_mul(2).saturating_add(64)
}

#[cfg(target_os = "linux")]
mod linux {
    use super::{free_huge_blocks, huge_pages_are_free, HUGE};

    use memmap2::MmapMut;

    /// Fresh anonymous memory for a buffer a decoder fills front to back,
    /// in transparent huge pages (`MADV_HUGEPAGE`) from its first byte: one
    /// fault and one zeroing per 2 MiB instead of per 4 KiB. Whole processes
    /// that read matmul_large and decode its payload in one libdeflate call
    /// took 0.71× the time into a `Vec` with the advice than into a plain
    /// `Vec` (30 pairs; populating the plain `Vec` first gave 1.00×), and
    /// 0.97× again when the buffer starts on a huge-page boundary (40
    /// pairs), since a `Vec`'s storage starts wherever the allocator put it
    /// and the part before its first boundary faults 4 KiB at a time.
    /// Reading a part nothing wrote gives zeros; only written pages take
    /// memory.
    pub struct HugeBuf {
        map: MmapMut,
        start: usize,
        cap: usize,
        len: usize,
    }

    impl HugeBuf {
        /// Room for `cap` bytes, of which the first `expected` will likely
        /// be written. `None` when `expected` is empty or too large to risk
        /// (see [`HUGE_MAX`]), the host has no huge pages free for it (see
        /// [`huge_pages_are_free`]), or the mapping cannot be made: the
        /// caller then uses a `Vec`. Whether a buffer is large enough to
        /// gain is the caller's to judge.
        pub fn new(cap: usize, expected: usize) -> Option<HugeBuf> {
            let expected = expected.min(cap);
            if !(1..=HUGE_MAX).contains(&expected) || !host_has_free(expected.div_ceil(HUGE) as u64)
            {
                return None;
            }
            let map = MmapMut::map_anon(cap.checked_add(HUGE)?).ok()?;
            let base = map.as_ptr() as usize;
            let start = base.next_multiple_of(HUGE) - base;
            let advised = cap.next_multiple_of(HUGE).min(map.len() - start);
            // SAFETY: [base + start, base + start + advised) lies inside the
            // mapping `map` owns; the advice only decides the size of the
            // pages that back it when first touched, never a byte of it.
            let rc = unsafe {
                libc::madvise(
                    (base + start) as *mut libc::c_void,
                    advised,
                    libc::MADV_HUGEPAGE,
                )
            };
            (rc == 0).then_some(HugeBuf {
                map,
                start,
                cap,
                len: 0,
            })
        }

        /// The whole room, for the decoder to write into.
        pub fn room(&mut self) -> &mut [u8] {
            &mut self.map[self.start..self.start + self.cap]
        }

        /// Makes the first `len` bytes of the room the buffer's contents.
        pub fn set_len(&mut self, len: usize) {
            assert!(len <= self.cap, "{len} bytes in a room of {}", self.cap);
            self.len = len;
        }
    }

    impl AsRef<[u8]> for HugeBuf {
        fn as_ref(&self) -> &[u8] {
            &self.map[self.start..self.start + self.len]
        }
    }

    /// Whether `wanted` huge pages are free now (`/proc/buddyinfo`).
    fn host_has_free(wanted: u64) -> bool {
        std::fs::read_to_string("/proc/buddyinfo")
            .ok()
            .and_then(|t| free_huge_blocks(&t))
            .is_some_and(|free| huge_pages_are_free(wanted, free))
    }

    /// Buffers expected to fill more than this keep 4 KiB pages. On a
    /// virtual machine whose balloon reports free memory to the host (as
    /// this one does, at order 9), free 2 MiB blocks are the ones the host
    /// has taken back, and a fault on one waits for the host to back it
    /// again. Back-to-back `neffld load --device null` of 256 MiB of
    /// compressible weights took 0.05–0.08 s in 27 of 30 runs and 0.11,
    /// 0.35 and 0.87 s in the other three, against a steady 0.18 s in 4 KiB
    /// pages; of 2 GiB, 0.18–2.46× the floor, median 1.32 in one session of
    /// 7 pairs (4 KiB pages: 1.13, 1.01–1.53), the more blocks it takes the
    /// likelier the slow ones.
    const HUGE_MAX: usize = 256 << 20;

    /// Spare capacity at least this long is populated in one call.
    const POPULATE_MIN: usize = 256 << 10;

    /// Faults in the pages of `v`'s spare capacity in one call
    /// (`MADV_POPULATE_WRITE`) instead of one page fault per page as it
    /// fills: a one-shot load of matmul_large took 3,140 page faults instead
    /// of 4,020 with its instruction images populated this way, and about
    /// 3 % less CPU time in two of three `perf stat` pairs (the third was
    /// noise).
    pub fn populate(v: &mut Vec<u8>) {
        if v.spare_capacity_mut().len() < POPULATE_MIN {
            return;
        }
        let spare = v.spare_capacity_mut();
        let base = spare.as_mut_ptr() as usize;
        let (start, end) = (base.next_multiple_of(4096), (base + spare.len()) & !4095);
        if end <= start {
            return;
        }
        // SAFETY: [start, end) lies inside `v`'s allocation, which `v` holds
        // for the whole call; the advice only maps its pages and never
        // changes a byte of it (fresh pages read as zero, present ones are
        // left alone), and nothing reads the spare capacity before it is
        // written anyway.
        unsafe {
            libc::madvise(
                start as *mut libc::c_void,
                end - start,
                libc::MADV_POPULATE_WRITE,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 
Node 0, zone    DMA32   2417   1866    966    602    232     90     55     46     33     39    688 
Node 0, zone   Normal  38866  33331  17411  11532   6309   3498   1789   1336   1389   1177   1393 
";

    #[test]
    fn free_huge_blocks_counts_orders_nine_and_ten_outside_dma() {
        // DMA32: 39 + 2 × 688; Normal: 1177 + 2 × 1393. DMA's 1 + 2 × 3 are left out.
        assert_eq!(free_huge_blocks(SAMPLE), Some(39 + 1376 + 1177 + 2786));
        let two_nodes = format!("{SAMPLE}{}", SAMPLE.replace("Node 0", "Node 1"));
        assert_eq!(
            free_huge_blocks(&two_nodes),
            Some(2 * (39 + 1376 + 1177 + 2786))
        );
        // Fragmented: nothing at order 9 or above.
        let fragmented = "Node 0, zone Normal 900 800 700 600 500 400 300 200 100 0 0\n";
        assert_eq!(free_huge_blocks(fragmented), Some(0));
    }

    #[test]
    fn free_huge_blocks_refuses_text_it_does_not_know() {
        assert_eq!(free_huge_blocks(""), None);
        assert_eq!(free_huge_blocks("Node 0, zone Normal 1 2 x\n"), None);
        assert_eq!(free_huge_blocks("no zones here\n"), None);
    }

    #[test]
    fn huge_pages_need_twice_their_number_free_and_a_reserve() {
        assert!(huge_pages_are_free(5, 74));
        assert!(!huge_pages_are_free(5, 73));
        assert!(!huge_pages_are_free(0, 63));
        assert!(!huge_pages_are_free(u64::MAX, u64::MAX - 1));
    }

    /// A huge buffer is offered only for what is worth it and what the host
    /// has free; one that is made starts on a huge-page boundary, reads as
    /// zeros where nothing wrote, and shows what was written, up to its
    /// length.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_huge_buffer_starts_on_a_boundary_and_holds_what_was_written() {
        assert!(HugeBuf::new(64 << 20, 0).is_none(), "nothing expected");
        assert!(
            HugeBuf::new(1 << 30, 300 << 20).is_none(),
            "more expected than is safe"
        );
        let text = std::fs::read_to_string("/proc/buddyinfo").unwrap_or_default();
        let free = free_huge_blocks(&text).is_some_and(|f| huge_pages_are_free(5, f));
        let Some(mut b) = HugeBuf::new(12 << 20, 9 << 20) else {
            assert!(!free, "the host had the huge pages free");
            return;
        };
        let room = b.room();
        assert_eq!(room.len(), 12 << 20);
        assert_eq!(room.as_ptr() as usize % HUGE, 0);
        assert!(room.iter().step_by(4096).all(|&x| x == 0));
        room[..5].copy_from_slice(b"bytes");
        room[(9 << 20) - 1] = 7;
        assert!(b.as_ref().is_empty());
        b.set_len(9 << 20);
        assert_eq!(&b.as_ref()[..5], b"bytes");
        assert_eq!(b.as_ref()[(9 << 20) - 1], 7);
        assert_eq!(b.as_ref().len(), 9 << 20);
        let too_long =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b.set_len((12 << 20) + 1)));
        assert!(too_long.is_err(), "a length past the room is refused");
    }

    /// Small or large, huge pages or not, a zeroed buffer is all zeros,
    /// takes what is written, and shares exactly that once frozen.
    #[test]
    fn a_zeroed_buffer_reads_zero_and_freezes_what_was_written() {
        for len in [
            0,
            5000,
            ZEROED_MAP_MIN,
            ZEROED_HUGE_MIN - 1,
            ZEROED_HUGE_MIN + 4096,
        ] {
            let mut b = ZeroedBuf::new(len, "a test buffer").unwrap();
            if len < ZEROED_MAP_MIN {
                assert!(matches!(b, ZeroedBuf::Plain(_)), "{len} bytes");
            } else if len < ZEROED_HUGE_MIN {
                assert!(
                    matches!(b, ZeroedBuf::Mapped(_)),
                    "{len} bytes: its own mapping"
                );
            }
            let bytes = b.bytes_mut();
            assert_eq!(bytes.len(), len);
            assert!(bytes.iter().all(|&x| x == 0), "{len} bytes");
            if let Some(last) = bytes.last_mut() {
                *last = 9;
            }
            let frozen = b.freeze();
            assert_eq!(frozen.len(), len);
            assert_eq!(frozen.last().copied(), (len > 0).then_some(9));
        }
        assert!(ZeroedBuf::new(usize::MAX / 2, "an impossible buffer").is_err());
    }

    /// The whole pages inside `v`'s spare capacity.
    #[cfg(target_os = "linux")]
    fn spare_pages(v: &mut Vec<u8>) -> (usize, usize) {
        let spare = v.spare_capacity_mut();
        let start = (spare.as_mut_ptr() as usize).next_multiple_of(4096);
        let end = (spare.as_mut_ptr() as usize + spare.len()) & !4095;
        (start, end)
    }

    /// Pages of `[start, end)` that are resident, and how many.
    #[cfg(target_os = "linux")]
    fn resident(start: usize, end: usize) -> (usize, usize) {
        let pages = (end - start) / 4096;
        let mut vec = vec![0u8; pages];
        // SAFETY: the range is page-aligned and inside a live allocation of
        // the caller's; mincore only reports residency into `vec`.
        let rc =
            unsafe { libc::mincore(start as *mut libc::c_void, end - start, vec.as_mut_ptr()) };
        assert_eq!(rc, 0);
        (vec.iter().filter(|&&b| b & 1 == 1).count(), pages)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn populate_makes_spare_capacity_resident_and_keeps_the_contents() {
        let mut v = crate::fallible::with_capacity::<u8>(8 << 20, "test").unwrap();
        v.extend_from_slice(b"kept");
        // Whatever memory the allocator handed over, its spare pages start
        // out not resident.
        let (start, end) = spare_pages(&mut v);
        // SAFETY: the range is page-aligned, inside `v`'s allocation, and
        // in its spare capacity, which holds no value anyone reads.
        let rc =
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
        assert_eq!(rc, 0);
        let (before, pages) = resident(start, end);
        assert_eq!(before, 0, "{before} of {pages} resident before");
        populate(&mut v);
        let (after, _) = resident(start, end);
        assert_eq!(after, pages, "every page resident after");
        assert_eq!(v, b"kept");
        // Too short to be worth a call: left to fault as it fills.
        let mut small = crate::fallible::with_capacity::<u8>(64 << 10, "test").unwrap();
        populate(&mut small);
        assert!(small.is_empty());
    }
}
