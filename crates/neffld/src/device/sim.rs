//! `SimDevice`: the default backend. Real allocator and ledger, and a sparse
//! byte store so that what the loader writes can be read back at the address
//! it baked into instructions and rings.
//!
//! Host memory follows what is written, and goes back when it is freed.
//! Storage is per allocation, and nothing is stored until a non-zero byte
//! is written: a NEFF may declare a 4 GiB tensor and write a few bytes of
//! it, and that costs a few pages, not 4 GiB (nor 4 GiB of address space
//! reserved at allocation). The first non-zero write makes one buffer for
//! the allocation: a heap vector below [`MAP_MIN`], else an anonymous
//! mapping whose pages the OS hands out zeroed only when first written, and
//! returns to the OS when the allocation is freed (a write is still one
//! memcpy). When the OS refuses a mapping that large, written 4 KiB pages
//! are kept in a map instead (copied a 2 GiB stage at about 390 MB/s).
//!
//! A load's own buffers are not copied at all when the loader offers them
//! ([`CopyIn::shared`]): the instruction images and DMA rings it keeps for
//! the loaded model anyway, and weights large enough to be most of their
//! payload. Written from offset 0 into an allocation that holds nothing yet,
//! such bytes are kept by reference, so a loaded model costs one copy of
//! its images; a later write copies them out first. Freed buffers are not
//! kept for reuse: what a freed allocation held goes back (a pool of them
//! used to keep up to 512 MiB after every unload).
//!
//! Every buffer and page is reserved fallibly: a host that cannot hold what
//! the device is given fails the copy with [`DeviceError::HostMemory`]
//! (`NRT_FAIL_HOST_MEM_ALLOC`) instead of aborting the process.
//! [`SimDevice::stored_pages`] counts the 4 KiB pages that hold bytes.
//!
//! Each allocation's pages sit behind their own lock: the table lock is held
//! only to find them, so per-core builds on several threads copy their
//! bytes in parallel.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use memmap2::MmapMut;

use super::alloc::{self, AllocFailure, Block, HbmAllocator};
use super::geometry::{Geometry, GRANULE};
use super::storage::{CopyIn, Storage};
use super::{Device, DeviceError, MemHandle, SimDevice, StartTaken};
use crate::fallible::{self, HostOom};
use crate::shared::SharedBytes;

const PAGE: usize = GRANULE as usize;

/// Buffers of at least this many bytes are an anonymous mapping of their
/// own: zeroed lazily by the OS (a large allocation written in a few places
/// costs those pages) and unmapped when freed (a heap block this large
/// would be taken from, and might stay in, the allocator's arenas). Below
/// it a heap vector, zeroed at once, costs at most 16 pages.
pub const MAP_MIN: usize = 64 << 10;

/// Writes into a mapping at least this long have their pages populated
/// before the copy (`MADV_POPULATE_WRITE`). Measured on 1 GiB copied into a
/// fresh mapping, CPU seconds over three rounds on the shared 2-core host:
/// populate first 0.65–0.84, fault during the copy 0.80–2.17, 4 KiB boxed
/// pages (the old store) 0.92–1.05, huge-page advice 1.11–3.10 (direct
/// compaction stalls: the host's THP defrag mode is `madvise`), so huge pages
/// are not used.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const POPULATE_MIN: usize = 1 << 20;

/// The one buffer of a dense allocation.
#[derive(Debug)]
enum Buf {
    /// Below [`MAP_MIN`].
    Heap(Vec<u8>),
    /// From [`MAP_MIN`]: a fresh anonymous mapping, zero until written.
    Map(MmapMut),
}

impl Buf {
    /// A zeroed buffer of `len` bytes, or `None` when the OS will not map
    /// one that large (the caller then keeps pages one by one).
    fn zeroed(len: usize) -> Result<Option<Buf>, HostOom> {
        if len >= MAP_MIN {
            return Ok(MmapMut::map_anon(len).ok().map(Buf::Map));
        }
        let mut v = fallible::with_capacity(len, "the simulated device's storage")?;
        v.resize(len, 0);
        Ok(Some(Buf::Heap(v)))
    }
}

impl Deref for Buf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Buf::Heap(v) => v,
            Buf::Map(m) => m,
        }
    }
}

impl DerefMut for Buf {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Buf::Heap(v) => v,
            Buf::Map(m) => m,
        }
    }
}

/// The stored bytes of one allocation.
#[derive(Debug)]
enum Pages {
    /// Nothing stored yet: `size` bytes that read as zeros.
    Empty { size: usize },
    /// One zeroed buffer and a bitmap of the 4 KiB pages written.
    Dense { buf: Buf, written: Vec<u64> },
    /// 4 KiB pages keyed by page index (the OS would not map one buffer).
    Sparse(HashMap<u64, Box<[u8]>>),
    /// Bytes the loader offered instead of a copy: `len` bytes at `start`
    /// of `owner`, zeros after; copied out on the first write.
    Shared {
        owner: SharedBytes,
        start: usize,
        len: usize,
        size: usize,
    },
}

impl Pages {
    /// The pages of a fresh allocation of `size` bytes: none yet.
    fn new(size: u64) -> Pages {
        match usize::try_from(size) {
            Ok(size) => Pages::Empty { size },
            // Larger than the address space: only pages can hold it.
            Err(_) => Pages::Sparse(HashMap::new()),
        }
    }

    /// 4 KiB pages holding bytes.
    #[cfg(any(test, feature = "testkit"))]
    fn stored(&self) -> usize {
        match self {
            Pages::Empty { .. } => 0,
            Pages::Dense { written, .. } => written.iter().map(|w| w.count_ones() as usize).sum(),
            Pages::Sparse(p) => p.len(),
            Pages::Shared { len, .. } => len.div_ceil(PAGE),
        }
    }

    /// Keeps a reference to `data` in `owner` instead of copying it, when
    /// it starts an allocation that holds nothing yet; false leaves the
    /// pages as they were, for a copy.
    fn adopt(&mut self, owner: &SharedBytes, offset: u64, data: &[u8]) -> bool {
        let Pages::Empty { size } = *self else {
            return false;
        };
        let Some(start) = owner.offset_of(data) else {
            return false;
        };
        if offset != 0 || data.len() > size {
            return false;
        }
        *self = Pages::Shared {
            owner: owner.clone(),
            start,
            len: data.len(),
            size,
        };
        true
    }

    /// The dense buffer for a first non-zero write into `size` bytes, or
    /// the sparse pages when the OS will not map it.
    fn first_buffer(size: usize) -> Result<Pages, HostOom> {
        let words = size.div_ceil(PAGE).div_ceil(64);
        Ok(match Buf::zeroed(size)? {
            Some(buf) => {
                let mut written = fallible::with_capacity(words, "the simulated device's storage")?;
                written.resize(words, 0);
                Pages::Dense { buf, written }
            }
            None => Pages::Sparse(HashMap::new()),
        })
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), HostOom> {
        match self {
            Pages::Empty { .. } if all_zero(data) => Ok(()), // nothing to store, nothing to overwrite
            Pages::Empty { size } => {
                *self = Pages::first_buffer(*size)?;
                self.write(offset, data)
            }
            Pages::Shared {
                owner,
                start,
                len,
                size,
            } => {
                // Copy out, then write: the shared bytes never change.
                let mut own = Pages::Empty { size: *size };
                own.write(0, &owner[*start..*start + *len])?;
                own.write(offset, data)?;
                *self = own;
                Ok(())
            }
            Pages::Dense { buf, written } => {
                // A fresh buffer reads as zeros: a zero write need only reach
                // pages already written (so a zeroed tensor costs no memory).
                if all_zero(data) {
                    for (page, in_page, at, n) in pieces(offset, data.len()) {
                        if written[(page / 64) as usize] & (1u64 << (page % 64)) != 0 {
                            let start = page as usize * PAGE + in_page;
                            buf[start..start + n].copy_from_slice(&data[at..at + n]);
                        }
                    }
                    return Ok(());
                }
                let at = offset as usize;
                // Fault the destination in one call rather than page by
                // page during the copy; an older kernel refuses, and the
                // copy then faults as usual.
                #[cfg(target_os = "linux")]
                if let Buf::Map(m) = buf {
                    if data.len() >= POPULATE_MIN {
                        let _ = m.advise_range(memmap2::Advice::PopulateWrite, at, data.len());
                    }
                }
                buf[at..at + data.len()].copy_from_slice(data);
                for (page, ..) in pieces(offset, data.len()) {
                    written[(page / 64) as usize] |= 1u64 << (page % 64);
                }
                Ok(())
            }
            Pages::Sparse(pages) => {
                for (page, in_page, at, n) in pieces(offset, data.len()) {
                    let src = &data[at..at + n];
                    match pages.get_mut(&page) {
                        Some(stored) => stored[in_page..in_page + n].copy_from_slice(src),
                        None if all_zero(src) => {}
                        None => {
                            let mut stored =
                                fallible::with_capacity(PAGE, "the simulated device's storage")?;
                            stored.resize(PAGE, 0);
                            stored[in_page..in_page + n].copy_from_slice(src);
                            fallible::reserve_map(pages, 1, "the simulated device's storage")?;
                            pages.insert(page, stored.into_boxed_slice());
                        }
                    }
                }
                Ok(())
            }
        }
    }

    fn read(&self, offset: u64, out: &mut [u8]) {
        match self {
            Pages::Empty { .. } => out.fill(0),
            Pages::Dense { buf, written } => {
                for (page, in_page, at, n) in pieces(offset, out.len()) {
                    let dst = &mut out[at..at + n];
                    if written[(page / 64) as usize] & (1u64 << (page % 64)) != 0 {
                        let start = page as usize * PAGE + in_page;
                        dst.copy_from_slice(&buf[start..start + n]);
                    } else {
                        dst.fill(0);
                    }
                }
            }
            Pages::Shared {
                owner, start, len, ..
            } => {
                let at = offset as usize;
                let held = len.saturating_sub(at).min(out.len());
                out[..held].copy_from_slice(&owner[start + at..start + at + held]);
                out[held..].fill(0);
            }
            Pages::Sparse(pages) => {
                for (page, in_page, at, n) in pieces(offset, out.len()) {
                    let dst = &mut out[at..at + n];
                    match pages.get(&page) {
                        Some(stored) => dst.copy_from_slice(&stored[in_page..in_page + n]),
                        None => dst.fill(0),
                    }
                }
            }
        }
    }
}

/// One allocation's pages, shared between the table and a copy in flight.
type Store = Arc<Mutex<Pages>>;

fn lock_pages(store: &Store) -> MutexGuard<'_, Pages> {
    store.lock().unwrap_or_else(PoisonError::into_inner)
}

/// True when every byte is zero; scans in blocks that vectorise.
fn all_zero(bytes: &[u8]) -> bool {
    bytes
        .chunks(256)
        .all(|c| c.iter().fold(0u8, |acc, &b| acc | b) == 0)
}

/// The backend that keeps written bytes sparsely.
#[derive(Debug)]
pub struct SimStorage {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    heap: HbmAllocator,
    stores: HashMap<MemHandle, Store>,
}

impl SimStorage {
    /// The storage of a device of `geometry` as a started runtime leaves
    /// it ([`HbmAllocator::started`]).
    pub fn new(geometry: &Geometry, start: StartTaken) -> SimStorage {
        SimStorage {
            inner: Mutex::new(Inner {
                heap: HbmAllocator::started(geometry, start),
                stores: HashMap::new(),
            }),
        }
    }

    /// Number of 4 KiB pages currently holding bytes, over all allocations.
    #[cfg(any(test, feature = "testkit"))]
    pub fn stored_pages(&self) -> usize {
        self.lock()
            .stores
            .values()
            .map(|p| lock_pages(p).stored())
            .sum()
    }

    /// Of [`SimStorage::stored_pages`], those held by reference to a
    /// loader's buffer rather than copied.
    #[cfg(any(test, feature = "testkit"))]
    pub fn shared_pages(&self) -> usize {
        self.lock()
            .stores
            .values()
            .map(|p| match &*lock_pages(p) {
                shared @ Pages::Shared { .. } => shared.stored(),
                _ => 0,
            })
            .sum()
    }

    /// A poisoned lock only means another thread panicked mid-call; the
    /// table is updated in an order that keeps it consistent.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn store(&self, handle: MemHandle) -> Result<Store, DeviceError> {
        self.lock()
            .stores
            .get(&handle)
            .cloned()
            .ok_or(DeviceError::UnknownHandle { handle })
    }
}

impl SimDevice {
    /// A simulated device of `geometry` that keeps every written byte.
    #[cfg(any(test, feature = "testkit"))]
    pub fn new(geometry: Geometry) -> SimDevice {
        SimDevice::as_started(geometry, StartTaken::default())
    }

    /// The device as a started runtime leaves it: what the runtime holds
    /// back in each channel's pools before its own allocations (its line's
    /// figures, [`crate::line::RuntimeLine::start_taken`]).
    pub fn as_started(geometry: Geometry, start: StartTaken) -> SimDevice {
        let storage = SimStorage::new(&geometry, start);
        Device::over(geometry, storage)
    }

    /// Number of 4 KiB pages currently holding bytes.
    #[cfg(any(test, feature = "testkit"))]
    pub fn stored_pages(&self) -> usize {
        self.storage().stored_pages()
    }

    /// Pages held by reference to a loader's buffer.
    #[cfg(any(test, feature = "testkit"))]
    pub fn shared_pages(&self) -> usize {
        self.storage().shared_pages()
    }
}

/// Splits `[offset, offset + len)` into per-page pieces:
/// (page index, offset in page, offset in the caller's buffer, length).
fn pieces(offset: u64, len: usize) -> impl Iterator<Item = (u64, usize, usize, usize)> {
    let mut done = 0usize;
    std::iter::from_fn(move || {
        if done >= len {
            return None;
        }
        let at = offset + done as u64;
        let page = at / GRANULE;
        let in_page = (at % GRANULE) as usize;
        let n = (PAGE - in_page).min(len - done);
        let piece = (page, in_page, done, n);
        done += n;
        Some(piece)
    })
}

impl Storage for SimStorage {
    fn allocate(
        &self,
        handle: MemHandle,
        channel: u32,
        size: u64,
        align: u64,
        place: alloc::Place,
    ) -> Result<Block, AllocFailure> {
        let Inner { heap, stores } = &mut *self.lock();
        let block = heap.alloc(channel, size, align, place)?;
        stores.insert(handle, Arc::new(Mutex::new(Pages::new(size))));
        Ok(block)
    }

    fn release(&self, handle: MemHandle, block: &Block) -> Result<(), String> {
        let store = {
            let mut inner = self.lock();
            inner.heap.free(block)?;
            inner.stores.remove(&handle)
        };
        // Freed here, outside the table's lock (a copy still in flight
        // frees it when it ends).
        drop(store);
        Ok(())
    }

    fn write(&self, copies: &[CopyIn<'_>]) -> Result<(), (usize, DeviceError)> {
        let stores: Vec<Option<Store>> = {
            let inner = self.lock();
            copies
                .iter()
                .map(|c| inner.stores.get(&c.handle).cloned())
                .collect()
        };
        for (i, (c, store)) in copies.iter().zip(stores).enumerate() {
            let Some(store) = store else { continue };
            let mut pages = lock_pages(&store);
            if !c.shared.is_some_and(|o| pages.adopt(o, c.offset, c.data)) {
                pages
                    .write(c.offset, c.data)
                    .map_err(|oom| (i, DeviceError::HostMemory(oom)))?;
            }
        }
        Ok(())
    }

    fn read(&self, handle: MemHandle, offset: u64, out: &mut [u8]) -> Result<(), DeviceError> {
        let store = self.store(handle)?;
        lock_pages(&store).read(offset, out);
        Ok(())
    }

    fn pools(&self, channel: u32) -> Vec<super::alloc::PoolFree> {
        self.lock().heap.pools(channel)
    }

    fn free_bytes(&self, channel: u32) -> u64 {
        self.lock().heap.free_bytes(channel)
    }

    fn capacity(&self, channel: u32) -> u64 {
        self.lock().heap.capacity(channel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Arch;
    use crate::device::{AllocReq, MemUsage, Owner, Place, Write};
    use crate::ids::{PCore, Pa};

    fn req(size: u64) -> AllocReq<'static> {
        AllocReq {
            size,
            align: 0,
            core: PCore(0),
            usage: MemUsage::Weight,
            owner: Owner::Runtime,
            place: Place::Kernel,
            hint: "t",
        }
    }

    /// A freed allocation's bytes are gone: the next allocation at the same
    /// address reads as zeros, and a page written for the first time holds
    /// only what was written.
    #[test]
    fn freed_bytes_never_show_again() {
        let d = SimDevice::new(Geometry::for_arch(Arch::Sunda));
        let a = d.alloc(req(1 << 20)).unwrap();
        d.write(a.handle, 0, &vec![0xAA; 1 << 20]).unwrap();
        assert_eq!(d.stored_pages(), 256);
        d.free(a.handle).unwrap();
        assert_eq!(d.stored_pages(), 0, "nothing is kept once freed");
        let b = d.alloc(req(1 << 20)).unwrap();
        assert_eq!(b.pa, a.pa, "first fit: the same address");
        let mut back = vec![1u8; 1 << 20];
        d.read(b.handle, 0, &mut back).unwrap();
        assert!(
            back.iter().all(|&x| x == 0),
            "a fresh allocation reads as zeros"
        );
        d.write(b.handle, 5000, &[7, 7]).unwrap();
        let mut page = vec![1u8; 4096];
        d.read(b.handle, 4096, &mut page).unwrap();
        assert_eq!(
            page.iter().filter(|&&x| x != 0).count(),
            2,
            "the rest of a partly written page is clear"
        );
        assert_eq!(&page[904..906], &[7, 7]);
        assert_eq!(d.stored_pages(), 1);
        d.write(b.handle, 8192, &[3u8; 4096]).unwrap();
        d.read(b.handle, 8192, &mut page).unwrap();
        assert!(page.iter().all(|&x| x == 3));
        d.free(b.handle).unwrap();
        assert_eq!(d.stored_pages(), 0);
    }

    proptest::proptest! {
        /// Writes of data and of zeros, anywhere, into a heap buffer and a
        /// mapping alike read back exactly as a plain byte array would, and
        /// exactly the pages written count as stored.
        #[test]
        fn writes_read_back_like_a_plain_array(
            writes in proptest::collection::vec((0usize..40_000, 0usize..10_000, 0u8..3), 1..12),
            mapped in proptest::bool::ANY,
        ) {
            const SIZE: usize = 40_000;
            let size = if mapped { MAP_MIN + SIZE } else { SIZE };
            let d = SimDevice::new(Geometry::for_arch(Arch::Sunda));
            let a = d.alloc(req(size as u64)).unwrap();
            let mut model = vec![0u8; size];
            let mut stored = vec![false; size.div_ceil(PAGE)];
            for (i, &(at, len, kind)) in writes.iter().enumerate() {
                let len = len.min(SIZE - at);
                // kind 0: zeros; 1: data; 2: zeros with one byte set at the end.
                let mut data = vec![if kind == 1 { i as u8 | 1 } else { 0 }; len];
                if kind == 2 && len > 0 {
                    data[len - 1] = 9;
                }
                d.write(a.handle, at as u64, &data).unwrap();
                model[at..at + len].copy_from_slice(&data);
                // A write of zeros only overwrites; one with data stores
                // every page it spans.
                if data.iter().any(|&b| b != 0) {
                    for (p, ..) in pieces(at as u64, len) {
                        stored[p as usize] = true;
                    }
                }
            }
            let mut back = vec![1u8; size];
            d.read(a.handle, 0, &mut back).unwrap();
            proptest::prop_assert!(back == model, "read-back differs from the model");
            proptest::prop_assert_eq!(d.stored_pages(), stored.iter().filter(|&&s| s).count());
        }
    }

    /// An allocation of [`MAP_MIN`] bytes or more is one mapping, made on
    /// its first non-zero write: writes of data and zeros read back like a
    /// plain array, only pages that took non-zero bytes (or were written
    /// before) count as stored.
    #[test]
    fn large_allocations_are_one_mapping_written_like_a_plain_array() {
        let size = (64 << 20) + 3 * PAGE + 100;
        let d = SimDevice::new(Geometry::for_arch(Arch::Sunda));
        let a = d.alloc(req(size as u64)).unwrap();
        let store = d.storage().store(a.handle).unwrap();
        assert!(
            matches!(&*lock_pages(&store), Pages::Empty { .. }),
            "nothing before a write"
        );
        drop(store);
        // (offset, bytes): data across page edges, zeros on fresh pages,
        // zeros over written bytes, the last byte.
        let writes: Vec<(usize, Vec<u8>)> = vec![
            (4090, vec![1; 10]),
            (40 << 20, vec![0; 3 * PAGE]),
            (4094, vec![0; 4]),
            (size - 1, vec![9]),
            (
                (33 << 20) + 7,
                (0..10_000u32).map(|i| (i % 255 + 1) as u8).collect(),
            ),
            // Long enough to be populated before the copy.
            (
                50 << 20,
                (0..2 * POPULATE_MIN).map(|i| (i % 7 + 1) as u8).collect(),
            ),
        ];
        let mut model = std::collections::BTreeMap::new();
        for (at, data) in &writes {
            d.write(a.handle, *at as u64, data).unwrap();
            for (i, &b) in data.iter().enumerate() {
                model.insert(at + i, b);
            }
        }
        let store = d.storage().store(a.handle).unwrap();
        assert!(matches!(
            &*lock_pages(&store),
            Pages::Dense {
                buf: Buf::Map(_),
                ..
            }
        ));
        drop(store);
        for (at, data) in &writes {
            let (lo, hi) = (at.saturating_sub(PAGE), (at + data.len() + PAGE).min(size));
            let mut back = vec![0xEEu8; hi - lo];
            d.read(a.handle, lo as u64, &mut back).unwrap();
            for (i, &b) in back.iter().enumerate() {
                assert_eq!(b, *model.get(&(lo + i)).unwrap_or(&0), "byte {}", lo + i);
            }
        }
        // Pages 0 and 1 (the first write, partly rewritten with zeros), the
        // last page, the 3 pages the 10,000 bytes span and the long write's.
        assert_eq!(d.stored_pages(), 2 + 1 + 3 + 2 * POPULATE_MIN / PAGE);
        d.free(a.handle).unwrap();
        assert_eq!(d.stored_pages(), 0);
    }

    /// The pages behind `handle`, to see how they are held.
    fn pages_of(d: &SimDevice, handle: MemHandle) -> Store {
        d.storage().store(handle).unwrap()
    }

    #[test]
    fn offered_bytes_are_kept_by_reference_until_written() {
        let size = MAP_MIN + PAGE + 10;
        let owner = SharedBytes::new(
            (0..size + 100)
                .map(|i| (i % 251) as u8)
                .collect::<Vec<u8>>(),
        );
        let data = &owner[50..50 + size - 7]; // 7 bytes short: they read as 0
        let d = SimDevice::new(Geometry::for_arch(Arch::Sunda));
        let a = d.alloc(req(size as u64)).unwrap();
        let write = |offset, data| Write {
            handle: a.handle,
            offset,
            data,
            shared: Some(&owner),
        };
        d.write_all(&[write(0, data)]).unwrap();
        assert!(matches!(
            *lock_pages(&pages_of(&d, a.handle)),
            Pages::Shared { start: 50, .. }
        ));
        assert_eq!(d.stored_pages(), size.div_ceil(PAGE));
        let mut back = vec![0xEEu8; size];
        d.read(a.handle, 0, &mut back).unwrap();
        assert_eq!(&back[..data.len()], data);
        assert!(back[data.len()..].iter().all(|&b| b == 0));
        let mut tail = [0xEEu8; 20];
        d.read(a.handle, (size - 20) as u64, &mut tail).unwrap();
        assert_eq!(&tail[..13], &data[size - 20..]);
        assert_eq!(&tail[13..], &[0; 7]);

        // A later write copies the bytes out first and leaves the owner alone.
        d.write(a.handle, 100, &[1, 2, 3]).unwrap();
        assert!(!matches!(
            *lock_pages(&pages_of(&d, a.handle)),
            Pages::Shared { .. }
        ));
        d.read(a.handle, 0, &mut back).unwrap();
        assert_eq!(&back[..100], &data[..100]);
        assert_eq!(&back[100..103], &[1, 2, 3]);
        assert_eq!(&back[103..data.len()], &data[103..]);
        assert_eq!(
            owner[150..153],
            [150, 151, 152],
            "the shared bytes never change"
        );
        d.free(a.handle).unwrap();
    }

    /// Offered bytes are kept by reference only when they start an
    /// allocation that holds nothing yet, whatever its size.
    #[test]
    fn offered_bytes_are_copied_unless_they_start_a_fresh_allocation() {
        let size = 3 * PAGE;
        let owner = SharedBytes::new(vec![7u8; size]);
        let elsewhere = vec![7u8; size];
        let d = SimDevice::new(Geometry::for_arch(Arch::Sunda));
        let shared = |handle, offset, data| {
            let w = Write {
                handle,
                offset,
                data,
                shared: Some(&owner),
            };
            d.write_all(&[w]).unwrap();
            matches!(*lock_pages(&pages_of(&d, handle)), Pages::Shared { .. })
        };
        let small = d.alloc(req(100)).unwrap();
        assert!(shared(small.handle, 0, &owner[..100]), "a small one too");
        let a = d.alloc(req(size as u64)).unwrap();
        assert!(!shared(a.handle, 8, &owner[..size - 8]), "not at the start");
        let b = d.alloc(req(size as u64)).unwrap();
        assert!(!shared(b.handle, 0, &elsewhere), "not inside the owner");
        let c = d.alloc(req(size as u64)).unwrap();
        d.write(c.handle, 0, &[1]).unwrap();
        assert!(!shared(c.handle, 0, &owner[..]), "already written");
        let mut back = vec![0u8; size];
        d.read(c.handle, 0, &mut back).unwrap();
        assert!(back.iter().all(|&x| x == 7), "copied all the same");
    }

    #[test]
    fn pieces_split_on_page_boundaries() {
        let v: Vec<_> = pieces(4090, 10).collect();
        assert_eq!(v, vec![(0, 4090, 0, 6), (1, 0, 6, 4)]);
        assert_eq!(pieces(0, 0).count(), 0);
        assert_eq!(pieces(8192, 3 * 4096).count(), 3);
    }

    #[test]
    fn zero_writes_to_fresh_pages_store_nothing() {
        let d = SimDevice::new(Geometry::for_arch(Arch::Sunda));
        let a = d.alloc(req(1 << 20)).unwrap();
        d.write(a.handle, 0, &vec![0u8; 1 << 20]).unwrap();
        assert_eq!(d.stored_pages(), 0);
        d.write(a.handle, 5000, &[1]).unwrap();
        d.write(a.handle, 4096, &[0; 16]).unwrap();
        assert_eq!(d.stored_pages(), 1);
        let mut b = [9u8; 3];
        d.read(a.handle, 4999, &mut b).unwrap();
        assert_eq!(b, [0, 1, 0]);
    }

    #[test]
    fn read_by_pa_finds_the_owning_allocation() {
        let d = SimDevice::new(Geometry::for_arch(Arch::Cayman));
        let a = d.alloc(req(10_000)).unwrap();
        d.write(a.handle, 9_000, b"xyz").unwrap();
        let mut b = [0u8; 3];
        d.read_pa(Pa(a.pa.0 + 9_000), &mut b).unwrap();
        assert_eq!(&b, b"xyz");
        // Past the logical size (inside the charged granules) is not mapped.
        assert!(d.read_pa(Pa(a.pa.0 + 9_999), &mut b).is_err());
        assert!(d.read_pa(Pa(4096), &mut b).is_err());
    }

    #[test]
    fn read_by_pa_forgets_freed_allocations() {
        let d = SimDevice::new(Geometry::for_arch(Arch::Sunda));
        let a = d.alloc(req(1 << 20)).unwrap();
        let b = d.alloc(req(1 << 20)).unwrap();
        assert_eq!(b.pa.0, a.pa.0 + (1 << 20));
        d.free(a.handle).unwrap();
        d.free(b.handle).unwrap();
        let mut byte = [0u8; 1];
        assert!(d.read_pa(b.pa, &mut byte).is_err());
        let c = d.alloc(req(2 << 20)).unwrap();
        assert_eq!(c.pa, a.pa);
        d.write(c.handle, (1 << 20) + 10, &[5]).unwrap();
        d.read_pa(Pa(b.pa.0 + 10), &mut byte).unwrap();
        assert_eq!(byte, [5]);
    }
}
