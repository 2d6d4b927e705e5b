//! The HBM allocator, modelled on the kernel's (docs/reference/stage.md §13.2).
//!
//! Per channel: the first 16 MiB is the firmware carve-out and never handed
//! out; the top 1 GiB is the *small pool*, preferred by requests of at most
//! 512 KiB so that small, long-lived objects do not fragment the main pool
//! below it; each request falls back to the other pool when its preferred one
//! is full. Both pools are first-fit free lists with 4 KiB granularity, and
//! requests aligned above 4 KiB take the first free range that can hold an
//! aligned block.
//!
//! A channel whose usable part (after the carve-out) is smaller than 2 GiB
//! has no small pool: splitting would leave a main pool smaller than the
//! small one, which no real device has. Everything then comes from one pool.

use super::free_index::RangeIndex;
use super::geometry::{Geometry, CARVEOUT, GRANULE};

/// Size of the small pool at the top of each channel.
pub const SMALL_POOL_BYTES: u64 = 1 << 30;

/// Requests up to this size (after rounding) prefer the small pool.
pub const SMALL_REQUEST_MAX: u64 = 512 << 10;

/// What a started runtime already holds in each HBM channel, before any
/// model: which decides where a model's first allocations land (the
/// figures are the runtime line's, `line/`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StartTaken {
    /// Bytes at the bottom of the small pool.
    pub small_pool: u64,
    /// Bytes at the bottom of the main pool (right after the carve-out).
    pub main_pool: u64,
    /// The runtime keeps no small pool: every request is first-fit from
    /// the carve-out up.
    pub no_small_pool: bool,
}

/// Where an allocation goes on its channel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Place {
    /// The kernel's rule: requests of at most [`SMALL_REQUEST_MAX`] try the
    /// small pool first, larger ones the main pool.
    #[default]
    Kernel,
    /// This pool first, then the other.
    First(Pool),
    /// As high in the channel as it fits (the runtime's own start-up
    /// allocations that would otherwise move every model's).
    Top,
    /// As high in this pool as it fits, then in the other: a start-up
    /// allocation the kernel's rule sends to the main pool (larger than
    /// [`SMALL_REQUEST_MAX`]) that moves no model's either.
    TopOf(Pool),
    /// A page of the contiguous scratchpad, which the driver grows as one
    /// region downward from the top of the main pool: `None` for the first
    /// page (as high in the main pool as it fits), else ending exactly at
    /// the given address (the lowest byte of the region so far). Refused
    /// when those bytes are taken: the region cannot move.
    Under(Option<u64>),
}

/// Which pool of a channel a block came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pool {
    /// The channel's main pool.
    Main,
    /// The pool of small blocks.
    Small,
}

/// One pool of a channel as it stands: why a request can be refused with
/// more bytes free than it asks — the free bytes are split between the
/// pools and, within each, between ranges; a request takes one range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolFree {
    /// Which pool.
    pub pool: Pool,
    /// Bytes the pool can hand out in all.
    pub capacity: u64,
    /// Bytes free in it now.
    pub free: u64,
    /// The longest free range: the largest request the pool can take.
    pub longest: u64,
}

/// A block handed out by [`HbmAllocator::alloc`]; give it back unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub channel: u32,
    pub pool: Pool,
    /// First byte; a multiple of the requested alignment and of 4 KiB.
    pub pa: u64,
    /// Bytes reserved: the request rounded up to 4 KiB (one granule for 0).
    pub charged: u64,
}

/// Why an allocation failed, before the device adds who asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocFailure {
    /// The request itself is malformed (the kernel's `-EINVAL`).
    Invalid(String),
    /// No free range is large enough (`-ENOMEM`).
    NoMem,
}

/// Rounds a request up to the granule. Size 0 takes one granule so that a
/// zero-size variable still gets a unique, real address (§6.2). `None` for
/// sizes the kernel rejects (above `i64::MAX`).
pub fn charged_size(size: u64) -> Option<u64> {
    if size > i64::MAX as u64 {
        return None;
    }
    Some(size.max(1).div_ceil(GRANULE) * GRANULE)
}

/// Free ranges of one pool, keyed by start, values are lengths. Adjacent
/// ranges are always merged, so the index stays as small as the
/// fragmentation; it is indexed by length ([`RangeIndex`]), so a request
/// costs O(log n) in the free ranges, not a walk over them.
#[derive(Clone, Debug)]
struct FreeList {
    start: u64,
    end: u64,
    free: RangeIndex,
    free_bytes: u64,
}

impl FreeList {
    fn new(start: u64, end: u64) -> FreeList {
        let mut free = RangeIndex::default();
        if end > start {
            free.insert(start, end - start);
        }
        FreeList {
            start,
            end,
            free,
            free_bytes: end - start,
        }
    }

    /// Hands out `[at, at + size)` of the free range `(range_start,
    /// range_len)`, which holds it.
    fn carve(&mut self, range_start: u64, range_len: u64, at: u64, size: u64) -> u64 {
        let head = at - range_start;
        let tail = range_start + range_len - (at + size);
        // The range is reshaped in place where one piece of it remains.
        match (head > 0, tail > 0) {
            (true, _) => {
                self.free.reshape(range_start, range_start, head);
                if tail > 0 {
                    self.free.insert(at + size, tail);
                }
            }
            (false, true) => {
                self.free.reshape(range_start, at + size, tail);
            }
            (false, false) => {
                self.free.remove(range_start);
            }
        }
        self.free_bytes -= size;
        at
    }

    /// First-fit: the lowest range that can hold `size` bytes at an address
    /// that is a multiple of `align` (a power of two, at least the granule).
    /// Only ranges that can hold such a block are looked at (the index
    /// skips the rest), so the answer is the walk's at a logarithmic cost.
    fn take(&mut self, size: u64, align: u64) -> Option<u64> {
        let aligned = |start: u64, len: u64| {
            let at = start.checked_add(align - 1)? & !(align - 1);
            let block_end = at.checked_add(size)?;
            (block_end <= start + len).then_some(at)
        };
        let (range_start, range_len) = self
            .free
            .lowest(size, align, &mut |s, l| aligned(s, l).is_some())?;
        let at = aligned(range_start, range_len)?;
        Some(self.carve(range_start, range_len, at, size))
    }

    /// The highest range that can hold `size` bytes at an address that is a
    /// multiple of `align`: the block ends as close to the pool's end as
    /// alignment allows.
    fn take_top(&mut self, size: u64, align: u64) -> Option<u64> {
        let aligned = |start: u64, len: u64| {
            let at = (start + len).checked_sub(size)? & !(align - 1);
            (at >= start).then_some(at)
        };
        let (range_start, range_len) = self
            .free
            .highest(size, align, &mut |s, l| aligned(s, l).is_some())?;
        let at = aligned(range_start, range_len)?;
        Some(self.carve(range_start, range_len, at, size))
    }

    /// [`Place::Under`]: the highest aligned block for `None`, else the
    /// block ending exactly at `end`.
    fn take_under(&mut self, end: Option<u64>, size: u64, align: u64) -> Option<u64> {
        match end {
            None => self.take_top(size, align),
            Some(end) => {
                let at = end.checked_sub(size).filter(|at| at % align == 0)?;
                self.take_at(at, size)
            }
        }
    }

    /// Exactly `[at, at + size)`, when it is free.
    fn take_at(&mut self, at: u64, size: u64) -> Option<u64> {
        let (range_start, range_len) = self.free.at_or_before(at)?;
        let end = at.checked_add(size)?;
        if end > range_start + range_len {
            return None;
        }
        Some(self.carve(range_start, range_len, at, size))
    }

    /// Returns `[start, start + len)` to the pool, merging with both
    /// neighbours. Refuses ranges outside the pool or overlapping free space,
    /// so a bookkeeping bug cannot hand the same bytes out twice.
    fn give(&mut self, start: u64, len: u64) -> Result<(), String> {
        let end = start
            .checked_add(len)
            .filter(|&e| start >= self.start && e <= self.end && len > 0)
            .ok_or_else(|| format!("block {start:#x}+{len:#x} is not inside its pool"))?;
        let before = self.free.at_or_before(start);
        let after = self.free.after(start);
        if before.is_some_and(|(s, l)| s + l > start) || after.is_some_and(|(s, _)| s < end) {
            return Err(format!("block {start:#x}+{len:#x} overlaps free space"));
        }
        let joins_before = before.filter(|&(s, l)| s + l == start);
        let joins_after = after.filter(|&(s, _)| s == end);
        // Merged in place into a neighbour where there is one.
        match (joins_before, joins_after) {
            (Some((s, l)), Some((a, al))) => {
                self.free.remove(a);
                self.free.reshape(s, s, l + len + al);
            }
            (Some((s, l)), None) => {
                self.free.reshape(s, s, l + len);
            }
            (None, Some((a, al))) => {
                self.free.reshape(a, start, len + al);
            }
            (None, None) => self.free.insert(start, len),
        }
        self.free_bytes += len;
        Ok(())
    }

    fn capacity(&self) -> u64 {
        self.end - self.start
    }
}

/// The two pools of one HBM channel.
#[derive(Clone, Debug)]
struct ChannelHeap {
    main: FreeList,
    small: Option<FreeList>,
}

impl ChannelHeap {
    fn pool_mut(&mut self, pool: Pool) -> Option<&mut FreeList> {
        match pool {
            Pool::Main => Some(&mut self.main),
            Pool::Small => self.small.as_mut(),
        }
    }

    fn pool(&self, pool: Pool) -> Option<&FreeList> {
        match pool {
            Pool::Main => Some(&self.main),
            Pool::Small => self.small.as_ref(),
        }
    }
}

/// All channels of one device. Not locked: the device owning it is.
#[derive(Clone, Debug)]
pub struct HbmAllocator {
    channels: Vec<ChannelHeap>,
}

impl HbmAllocator {
    #[cfg(test)]
    pub fn new(geometry: &Geometry) -> HbmAllocator {
        HbmAllocator::with_small_pool_taken(geometry, 0)
    }

    /// An allocator whose small pools each begin `taken` bytes (rounded up
    /// to the granule, at most the whole pool) above their start: what a
    /// started runtime has already allocated for itself there.
    #[cfg(test)]
    pub fn with_small_pool_taken(geometry: &Geometry, taken: u64) -> HbmAllocator {
        HbmAllocator::started(
            geometry,
            StartTaken {
                small_pool: taken,
                ..StartTaken::default()
            },
        )
    }

    /// An allocator as a started runtime leaves it ([`StartTaken`]).
    pub fn started(geometry: &Geometry, start: StartTaken) -> HbmAllocator {
        let granules = |n: u64| n.div_ceil(GRANULE).saturating_mul(GRANULE);
        let channels = (0..geometry.hbm_channels())
            .map(|c| {
                // `channel_base` only fails for an out-of-range channel.
                let base = geometry.channel_base(c).map_or(0, |pa| pa.0);
                let usable_start = base + CARVEOUT;
                let end = base + geometry.hbm_bytes_per_channel();
                let main_start =
                    (usable_start + granules(start.main_pool)).min(end.saturating_sub(GRANULE));
                if !start.no_small_pool && end - usable_start >= 2 * SMALL_POOL_BYTES {
                    let split = end - SMALL_POOL_BYTES;
                    let taken = granules(start.small_pool).min(SMALL_POOL_BYTES);
                    ChannelHeap {
                        main: FreeList::new(main_start.min(split), split),
                        small: Some(FreeList::new(split + taken, end)),
                    }
                } else {
                    ChannelHeap {
                        main: FreeList::new(main_start, end),
                        small: None,
                    }
                }
            })
            .collect();
        HbmAllocator { channels }
    }

    /// Allocates `size` bytes (rounded up to 4 KiB) on `channel`. `align` 0
    /// means none; otherwise it must be a power of two. `place` says where
    /// ([`Place`]). Validation follows the kernel: bad size, alignment or
    /// channel is `Invalid`, no room is `NoMem`.
    pub fn alloc(
        &mut self,
        channel: u32,
        size: u64,
        align: u64,
        place: Place,
    ) -> Result<Block, AllocFailure> {
        let charged = charged_size(size).ok_or_else(|| {
            AllocFailure::Invalid(format!(
                "size {size} exceeds the largest allocation (i64::MAX)"
            ))
        })?;
        if align != 0 && !align.is_power_of_two() {
            return Err(AllocFailure::Invalid(format!(
                "alignment {align} is not a power of two"
            )));
        }
        let channel_count = self.channels.len();
        let heap = self.channels.get_mut(channel as usize).ok_or_else(|| {
            AllocFailure::Invalid(format!(
                "HBM channel {channel} out of range (device has {channel_count})"
            ))
        })?;
        // An alignment no address of the channel meets can never be served,
        // however much is free: a malformed request, not a full device.
        let meets = |p: &FreeList| {
            p.start
                .checked_next_multiple_of(align.max(GRANULE))
                .is_some_and(|a| a < p.end)
        };
        if !(meets(&heap.main) || heap.small.as_ref().is_some_and(meets)) {
            let end = heap.small.as_ref().map_or(heap.main.end, |s| s.end);
            return Err(AllocFailure::Invalid(format!(
                "alignment {align} is met by no address of HBM {channel} ({:#x} to {end:#x})",
                heap.main.start
            )));
        }
        let align = align.max(GRANULE);
        let first = match place {
            Place::First(pool) | Place::TopOf(pool) => pool,
            Place::Kernel if charged <= SMALL_REQUEST_MAX => Pool::Small,
            Place::Kernel => Pool::Main,
            // The small pool sits above the main one.
            Place::Top => Pool::Small,
            Place::Under(end) => {
                return heap
                    .main
                    .take_under(end, charged, align)
                    .map(|pa| Block {
                        channel,
                        pool: Pool::Main,
                        pa,
                        charged,
                    })
                    .ok_or(AllocFailure::NoMem)
            }
        };
        let order = match first {
            Pool::Small => [Pool::Small, Pool::Main],
            Pool::Main => [Pool::Main, Pool::Small],
        };
        for pool in order {
            let taken = heap.pool_mut(pool).and_then(|p| match place {
                Place::Top | Place::TopOf(_) => p.take_top(charged, align),
                _ => p.take(charged, align),
            });
            if let Some(pa) = taken {
                return Ok(Block {
                    channel,
                    pool,
                    pa,
                    charged,
                });
            }
        }
        Err(AllocFailure::NoMem)
    }

    /// Gives a block back; neighbours coalesce.
    pub fn free(&mut self, block: &Block) -> Result<(), String> {
        self.channels
            .get_mut(block.channel as usize)
            .and_then(|h| h.pool_mut(block.pool))
            .ok_or_else(|| format!("block names an unknown pool: {block:?}"))?
            .give(block.pa, block.charged)
    }

    /// Free bytes of a channel, both pools (0 for an unknown channel).
    pub fn free_bytes(&self, channel: u32) -> u64 {
        self.channels.get(channel as usize).map_or(0, |h| {
            h.main.free_bytes + h.small.as_ref().map_or(0, |s| s.free_bytes)
        })
    }

    /// Bytes a channel can hand out in all (both pools, without what was
    /// taken before the first allocation).
    pub fn capacity(&self, channel: u32) -> u64 {
        [Pool::Main, Pool::Small]
            .iter()
            .map(|&p| self.pool_capacity(channel, p))
            .sum()
    }

    /// Capacity of one pool of a channel (0 if it has no such pool).
    pub fn pool_capacity(&self, channel: u32, pool: Pool) -> u64 {
        self.channels
            .get(channel as usize)
            .and_then(|h| h.pool(pool))
            .map_or(0, FreeList::capacity)
    }

    /// Address range `[start, end)` of one pool (for tests and reports).
    #[cfg(test)]
    pub fn pool_range(&self, channel: u32, pool: Pool) -> Option<(u64, u64)> {
        self.channels
            .get(channel as usize)
            .and_then(|h| h.pool(pool))
            .map(|p| (p.start, p.end))
    }

    /// Number of disjoint free ranges of a channel (a fragmentation measure).
    #[cfg(test)]
    pub fn free_ranges(&self, channel: u32) -> usize {
        self.channels.get(channel as usize).map_or(0, |h| {
            h.main.free.len() + h.small.as_ref().map_or(0, |s| s.free.len())
        })
    }

    /// The longest free range of one pool of a channel (0 when it has no
    /// such pool or nothing free): no single request larger than this fits
    /// there, whatever the pool's free bytes add up to.
    #[cfg(test)]
    pub fn longest_free(&self, channel: u32, pool: Pool) -> u64 {
        self.channels
            .get(channel as usize)
            .and_then(|h| h.pool(pool))
            .map_or(0, |p| p.free.longest())
    }

    /// Each pool of a channel (main first), as it stands.
    pub fn pools(&self, channel: u32) -> Vec<PoolFree> {
        let Some(h) = self.channels.get(channel as usize) else {
            return Vec::new();
        };
        std::iter::once((Pool::Main, &h.main))
            .chain(h.small.as_ref().map(|s| (Pool::Small, s)))
            .map(|(pool, p)| PoolFree {
                pool,
                capacity: p.capacity(),
                free: p.free_bytes,
                longest: p.free.longest(),
            })
            .collect()
    }

    /// Free bytes of one pool of a channel.
    #[cfg(test)]
    pub fn pool_free_bytes(&self, channel: u32, pool: Pool) -> u64 {
        self.channels
            .get(channel as usize)
            .and_then(|h| h.pool(pool))
            .map_or(0, |p| p.free_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Arch;

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    fn sunda() -> (Geometry, HbmAllocator) {
        let g = Geometry::for_arch(Arch::Sunda);
        let a = HbmAllocator::new(&g);
        (g, a)
    }

    /// An alignment no address of the channel meets is a malformed request,
    /// whatever is free; one some address meets but no free range serves
    /// is out of memory.
    #[test]
    fn an_alignment_past_the_channel_is_invalid() {
        let (g, mut a) = sunda();
        let ch_end = g.hbm_bytes_per_channel();
        for align in [1 << 63, ch_end.next_power_of_two() << 1] {
            let e = a.alloc(0, 4096, align, Place::Kernel).unwrap_err();
            assert!(
                matches!(e, AllocFailure::Invalid(ref m) if m.contains("met by no address")),
                "{align}: {e:?}"
            );
        }
        let half = ch_end.next_power_of_two() / 2;
        assert!(half < ch_end);
        assert_eq!(
            a.alloc(0, ch_end, half, Place::Kernel),
            Err(AllocFailure::NoMem)
        );
    }

    /// The indexed free list against a plain first-fit walk over an ordered
    /// map (the allocator before the index): the same addresses for a long
    /// random mix of aligned requests from the bottom and from the top, and
    /// frees in random order.
    #[test]
    fn the_index_hands_out_what_a_first_fit_walk_would() {
        use std::collections::BTreeMap;
        struct Walk(BTreeMap<u64, u64>);
        impl Walk {
            fn cut(&mut self, s: u64, l: u64, at: u64, size: u64) -> u64 {
                self.0.remove(&s);
                if at > s {
                    self.0.insert(s, at - s);
                }
                if s + l > at + size {
                    self.0.insert(at + size, s + l - at - size);
                }
                at
            }
            fn take(&mut self, size: u64, align: u64) -> Option<u64> {
                let (s, l, at) = self.0.iter().find_map(|(&s, &l)| {
                    let at = (s + align - 1) & !(align - 1);
                    (at + size <= s + l).then_some((s, l, at))
                })?;
                Some(self.cut(s, l, at, size))
            }
            fn take_top(&mut self, size: u64, align: u64) -> Option<u64> {
                let (s, l, at) = self.0.iter().rev().find_map(|(&s, &l)| {
                    let at = (s + l).checked_sub(size)? & !(align - 1);
                    (at >= s).then_some((s, l, at))
                })?;
                Some(self.cut(s, l, at, size))
            }
            fn give(&mut self, start: u64, len: u64) {
                let mut s = start;
                let mut l = len;
                if let Some((&b, &bl)) = self.0.range(..start).next_back() {
                    if b + bl == start {
                        self.0.remove(&b);
                        s = b;
                        l += bl;
                    }
                }
                if let Some(&al) = self.0.get(&(start + len)) {
                    self.0.remove(&(start + len));
                    l += al;
                }
                self.0.insert(s, l);
            }
        }
        let mut list = FreeList::new(CARVEOUT, CARVEOUT + 2 * GIB);
        let mut walk = Walk(BTreeMap::from([(CARVEOUT, 2 * GIB)]));
        let mut held: Vec<(u64, u64)> = Vec::new();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..30_000 {
            if rnd(5) < 3 || held.is_empty() {
                let size = (1 + rnd(64)) * GRANULE * if rnd(8) == 0 { 64 } else { 1 };
                let align = GRANULE << rnd(11);
                let (a, b) = if rnd(4) == 0 {
                    (list.take_top(size, align), walk.take_top(size, align))
                } else {
                    (list.take(size, align), walk.take(size, align))
                };
                assert_eq!(a, b, "size {size} align {align}");
                if let Some(at) = a {
                    held.push((at, size));
                }
            } else {
                let (at, size) = held.swap_remove(rnd(held.len() as u64) as usize);
                list.give(at, size).unwrap();
                walk.give(at, size);
            }
            assert_eq!(list.free.len(), walk.0.len());
        }
        assert_eq!(list.free.ranges(), walk.0.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn rounding_and_zero_size() {
        assert_eq!(charged_size(0), Some(4096));
        assert_eq!(charged_size(1), Some(4096));
        assert_eq!(charged_size(4096), Some(4096));
        assert_eq!(charged_size(4097), Some(8192));
        assert_eq!(charged_size(i64::MAX as u64), Some(1 << 63));
        assert_eq!(charged_size(i64::MAX as u64 + 1), None);
        let (_, mut a) = sunda();
        assert_eq!(a.alloc(0, 0, 0, Place::Kernel).unwrap().charged, 4096);
        assert_eq!(a.alloc(0, 5000, 0, Place::Kernel).unwrap().charged, 8192);
    }

    #[test]
    fn kernel_validation() {
        let (_, mut a) = sunda();
        assert!(matches!(
            a.alloc(2, 4096, 0, Place::Kernel),
            Err(AllocFailure::Invalid(_))
        ));
        assert!(matches!(
            a.alloc(0, u64::MAX, 0, Place::Kernel),
            Err(AllocFailure::Invalid(_))
        ));
        assert!(matches!(
            a.alloc(0, 4096, 3 * 4096, Place::Kernel),
            Err(AllocFailure::Invalid(_))
        ));
        assert!(matches!(
            a.alloc(0, 20 * GIB, 0, Place::Kernel),
            Err(AllocFailure::NoMem)
        ));
        // No address of a 16 GiB channel is a multiple of 2^62.
        assert!(matches!(
            a.alloc(0, 4096, 1 << 62, Place::Kernel),
            Err(AllocFailure::Invalid(_))
        ));
    }

    #[test]
    fn small_requests_go_to_the_top_gib_large_ones_below() {
        let (g, mut a) = sunda();
        let base = g.channel_base(1).unwrap().0;
        let end = base + 16 * GIB;
        let forced = a.alloc(1, 2 * MIB, 0, Place::First(Pool::Small)).unwrap();
        assert_eq!(forced.pool, Pool::Small, "an explicit pool comes first");
        a.free(&forced).unwrap();
        let top = a.alloc(1, 2 * MIB, 64 * 1024, Place::Top).unwrap();
        assert_eq!(top.pa + top.charged, end, "as high as it fits");
        a.free(&top).unwrap();
        let small = a.alloc(1, 512 * 1024, 0, Place::Kernel).unwrap();
        assert_eq!((small.pool, small.pa), (Pool::Small, end - GIB));
        let large = a.alloc(1, 512 * 1024 + 1, 0, Place::Kernel).unwrap();
        assert_eq!((large.pool, large.pa), (Pool::Main, base + CARVEOUT));
        assert_eq!(
            a.pool_range(1, Pool::Main),
            Some((base + CARVEOUT, end - GIB))
        );
    }

    /// The contiguous scratchpad: the first page at the top of the main
    /// pool (never in the small pool above it), each next one ending where
    /// the region begins; bytes in the way refuse the page.
    #[test]
    fn under_grows_one_region_down_from_the_main_pool_top() {
        let g = Geometry::for_arch(Arch::Sunda);
        let mut a = HbmAllocator::new(&g);
        let main_end = 16 * GIB - GIB;
        let first = a.alloc(0, 64 * MIB, 4 * MIB, Place::Under(None)).unwrap();
        assert_eq!((first.pool, first.pa), (Pool::Main, main_end - 64 * MIB));
        let second = a
            .alloc(0, 64 * MIB, 4 * MIB, Place::Under(Some(first.pa)))
            .unwrap();
        assert_eq!(second.pa + second.charged, first.pa);
        // A block in the way of the next page refuses it.
        let blocker = a.alloc(0, MIB, 0, Place::Top).unwrap();
        assert_eq!(blocker.pool, Pool::Small, "the small pool stays above");
        let squat = second.pa - MIB;
        assert_eq!(a.channels[0].main.take_at(squat, MIB), Some(squat));
        assert_eq!(
            a.alloc(0, 64 * MIB, 4 * MIB, Place::Under(Some(second.pa))),
            Err(AllocFailure::NoMem)
        );
        // So is a page that would not start aligned, in free space.
        assert_eq!(
            a.alloc(0, 64 * MIB, 4 * MIB, Place::Under(Some(8 * GIB + 4096))),
            Err(AllocFailure::NoMem)
        );
        a.free(&second).unwrap();
        a.free(&first).unwrap();
    }

    #[test]
    fn pools_fall_back_to_each_other() {
        let g = Geometry::custom(Arch::Cayman, 2, 1, 3 * GIB + CARVEOUT).unwrap();
        let mut a = HbmAllocator::new(&g);
        let whole_main = a.alloc(0, 2 * GIB, 0, Place::Kernel).unwrap();
        assert_eq!((whole_main.pool, whole_main.pa), (Pool::Main, CARVEOUT));
        // The main pool is full: a large request falls back to the small pool.
        let large = a.alloc(0, GIB, 0, Place::Kernel).unwrap();
        assert_eq!((large.pool, large.pa), (Pool::Small, CARVEOUT + 2 * GIB));
        assert_eq!(a.free_bytes(0), 0);
        assert_eq!(a.alloc(0, 4096, 0, Place::Kernel), Err(AllocFailure::NoMem));
        // The small pool is full: a small request falls back to the main pool.
        a.free(&whole_main).unwrap();
        let spilled = a.alloc(0, 4096, 0, Place::Kernel).unwrap();
        assert_eq!(spilled.pool, Pool::Main);
    }

    #[test]
    fn a_started_runtime_has_taken_the_bottom_of_each_small_pool() {
        let g = Geometry::for_arch(Arch::Cayman);
        let mut a = HbmAllocator::with_small_pool_taken(&g, 0x3b_0000);
        let base = g.channel_base(2).unwrap().0;
        let small = a.alloc(2, 4096, 0, Place::Kernel).unwrap();
        assert_eq!((small.pool, small.pa), (Pool::Small, base + 0x5_c03b_0000));
        assert_eq!(a.pool_capacity(2, Pool::Small), GIB - 0x3b_0000);
        // Alignment is of the address itself.
        assert_eq!(
            a.alloc(2, 4096, 256 << 10, Place::Kernel).unwrap().pa % (256 << 10),
            0
        );
    }

    #[test]
    fn tiny_channels_have_a_single_pool() {
        let g = Geometry::custom(Arch::Sunda, 1, 1, 64 * MIB).unwrap();
        let mut a = HbmAllocator::new(&g);
        assert_eq!(a.pool_capacity(0, Pool::Small), 0);
        assert_eq!(a.pool_capacity(0, Pool::Main), 48 * MIB);
        let b = a.alloc(0, 4096, 0, Place::Kernel).unwrap();
        assert_eq!((b.pool, b.pa), (Pool::Main, CARVEOUT));
    }

    #[test]
    fn the_small_pool_needs_two_gib_of_usable_channel() {
        let just_under = Geometry::custom(Arch::Cayman, 2, 1, 2 * GIB + CARVEOUT - 4096).unwrap();
        let a = HbmAllocator::new(&just_under);
        assert_eq!(a.pool_capacity(0, Pool::Small), 0);
        assert_eq!(a.pool_capacity(0, Pool::Main), 2 * GIB - 4096);
        let exactly = Geometry::custom(Arch::Cayman, 2, 1, 2 * GIB + CARVEOUT).unwrap();
        let a = HbmAllocator::new(&exactly);
        assert_eq!(a.pool_capacity(0, Pool::Small), GIB);
        assert_eq!(a.pool_capacity(0, Pool::Main), GIB);
    }

    #[test]
    fn aligned_first_fit_skips_to_the_next_boundary() {
        let (_, mut a) = sunda();
        let first = a.alloc(0, MIB, 0, Place::Kernel).unwrap();
        assert_eq!(first.pa, CARVEOUT);
        let aligned = a.alloc(0, MIB, 64 * MIB, Place::Kernel).unwrap();
        assert_eq!(aligned.pa % (64 * MIB), 0);
        assert_eq!(aligned.pa, 64 * MIB);
        // The gap left before the aligned block is used by the next request.
        let filler = a.alloc(0, MIB, 0, Place::Kernel).unwrap();
        assert_eq!(filler.pa, CARVEOUT + MIB);
    }

    #[test]
    fn free_coalesces_so_the_whole_channel_comes_back() {
        let g = Geometry::custom(Arch::Cayman, 2, 1, 3 * GIB + CARVEOUT).unwrap();
        let mut a = HbmAllocator::new(&g);
        let mut blocks = Vec::new();
        while let Ok(b) = a.alloc(0, 3 * MIB + 4096, 0, Place::Kernel) {
            blocks.push(b);
        }
        while let Ok(b) = a.alloc(0, 4096, 0, Place::Kernel) {
            blocks.push(b);
        }
        assert_eq!(a.free_bytes(0), 0);
        // Free in an interleaved order so merges happen on both sides.
        let (even, odd): (Vec<_>, Vec<_>) =
            blocks.iter().enumerate().partition(|(i, _)| i % 2 == 0);
        for (_, b) in odd.into_iter().chain(even) {
            a.free(b).unwrap();
        }
        assert_eq!(a.free_ranges(0), 2);
        let main = a
            .alloc(0, a.pool_capacity(0, Pool::Main), 0, Place::Kernel)
            .unwrap();
        let small = a
            .alloc(0, a.pool_capacity(0, Pool::Small), 0, Place::Kernel)
            .unwrap();
        assert_eq!((main.pa, main.charged), (CARVEOUT, 2 * GIB));
        assert_eq!((small.pa, small.charged), (CARVEOUT + 2 * GIB, GIB));
    }

    #[test]
    fn double_free_and_foreign_blocks_are_refused() {
        let (_, mut a) = sunda();
        let b = a.alloc(0, 8192, 0, Place::Kernel).unwrap();
        a.free(&b).unwrap();
        assert!(a.free(&b).is_err());
        let carve = Block { pa: 0, ..b };
        assert!(a.free(&carve).is_err());
        let bad_channel = Block { channel: 9, ..b };
        assert!(a.free(&bad_channel).is_err());
        // A forged block running into free space above it is refused too.
        let b1 = a.alloc(0, MIB, 0, Place::Kernel).unwrap();
        let b2 = a.alloc(0, MIB, 0, Place::Kernel).unwrap();
        let _b3 = a.alloc(0, MIB, 0, Place::Kernel).unwrap();
        assert_eq!(b1.pa, CARVEOUT);
        a.free(&b2).unwrap();
        let runs_into_b2 = Block {
            charged: 2 * MIB,
            ..b1
        };
        assert!(a.free(&runs_into_b2).is_err());
        a.free(&b1).unwrap();
    }
}
