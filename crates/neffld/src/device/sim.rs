//! `SimDevice`: the default backend. Real allocator and ledger, and a sparse
//! byte store so that what the loader writes can be read back at the address
//! it baked into instructions and rings.
//!
//! Storage is per allocation. A NEFF may declare a 4 GiB tensor and write a
//! few bytes of it, and that must cost a few pages of host memory, not
//! 4 GiB. Allocations above [`DENSE_MAX`] therefore live in an anonymous
//! mapping reserved at allocation: the OS hands out a zeroed page only when
//! one is first written, so never-written space costs nothing, and a write is
//! still one memcpy (4 KiB pages kept in a map, the fallback when the
//! mapping cannot be reserved, copied a 2 GiB stage at about 390 MB/s).
//! Smaller ones (weights, images, rings, tables: nearly every
//! byte a load writes) keep one buffer, so a write is one memcpy and copies
//! from several build threads do not contend on a page allocator. The buffer
//! is one a freed allocation left behind, handed over when the allocation is
//! made (under the device lock it already holds, so a copy never has to take
//! a pool lock), else a fresh one made on the first non-zero write and
//! zeroed lazily by the OS. A sparse page is made only for non-zero bytes
//! and a dense buffer only on a non-zero write (unless one was handed over),
//! so a tensor that is never written, or written with zeros, costs nothing.
//! [`SimDevice::stored_pages`] counts the 4 KiB pages that hold bytes: the
//! sparse pages, and the pages of dense buffers that have been written
//! (zeros included: they were copied into memory the buffer keeps).
//!
//! Each allocation's pages sit behind their own lock: the device lock is held
//! only to check a copy against the books, so per-core builds on several
//! threads copy their bytes in parallel.

use std::collections::{BTreeMap, HashMap};
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use memmap2::MmapMut;

use super::alloc::{self, AllocFailure, Block, HbmAllocator};
use super::geometry::{Geometry, GRANULE};
use super::storage::{CopyIn, Storage};
use super::{Device, DeviceError, MemHandle, SimDevice, StartTaken};
use crate::shared::SharedBytes;

const PAGE: usize = GRANULE as usize;

/// Largest allocation stored in a heap buffer (and kept in the pool when
/// freed); larger ones are mapped.
pub const DENSE_MAX: u64 = 64 << 20;

/// Writes into a mapping at least this long have their pages populated
/// before the copy (`MADV_POPULATE_WRITE`). Measured on 1 GiB copied into a
/// fresh mapping, CPU seconds over three rounds on the shared 2-core host:
/// populate first 0.65–0.84, fault during the copy 0.80–2.17, 4 KiB boxed
/// pages (the old store) 0.92–1.05, huge-page advice 1.11–3.10 (direct
/// compaction stalls: the host's THP defrag mode is `madvise`), so huge pages
/// are not used.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const POPULATE_MIN: usize = 1 << 20;

/// Most bytes of freed buffers kept for reuse.
const POOL_MAX: usize = 512 << 20;

/// Buffers of freed dense allocations, for reuse, by length.
#[derive(Debug, Default)]
struct Pool {
    bufs: BTreeMap<usize, Vec<Vec<u8>>>,
    bytes: usize,
}

impl Pool {
    /// The shortest kept buffer of at least `size` bytes; its contents are
    /// unspecified. It keeps its length (the pages know their own size), so
    /// it goes back to the pool on the shelf it came from and the pool's
    /// byte count stays the memory it holds.
    fn take(&mut self, size: usize) -> Option<Vec<u8>> {
        let shelf = self.bufs.range_mut(size..).next()?.1;
        let b = shelf.pop().expect("no empty shelf is kept");
        if shelf.is_empty() {
            self.bufs.remove(&b.len());
        }
        self.bytes -= b.len();
        Some(b)
    }

    /// Keeps `buf`, or hands it back when the pool is full, so the caller
    /// can free it outside the device lock.
    fn give(&mut self, buf: Vec<u8>) -> Option<Vec<u8>> {
        if buf.is_empty() || self.bytes + buf.len() > POOL_MAX {
            return Some(buf);
        }
        self.bytes += buf.len();
        self.bufs.entry(buf.len()).or_default().push(buf);
        None
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.bufs.values().map(Vec::len).sum()
    }
}

/// The one buffer of a dense allocation.
#[derive(Debug)]
enum Buf {
    /// Up to [`DENSE_MAX`]: possibly a reused buffer with stale bytes.
    Heap(Vec<u8>),
    /// Larger: a fresh anonymous mapping, zero until written.
    Map(MmapMut),
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
    /// One buffer (a mapping reserved at allocation, or a kept one handed
    /// over then, else one made on the first non-zero write) and a bitmap of
    /// the 4 KiB pages that hold bytes.
    Dense {
        buf: Option<Buf>,
        size: usize,
        written: Vec<u64>,
    },
    /// 4 KiB pages keyed by page index.
    Sparse(HashMap<u64, Box<[u8]>>),
    /// A large allocation whose bytes were all given at once from a buffer
    /// the device shares with the loader (weights, in the inflated
    /// payload): `len` bytes at `start` of `owner`, zeros after. Kept
    /// instead of copied, because populating and copying a gigabyte of
    /// weights cost as much as inflating them; copied out on the first write.
    Shared {
        owner: SharedBytes,
        start: usize,
        len: usize,
        size: usize,
    },
}

impl Pages {
    /// Empty pages for an allocation of `size` bytes; a dense one takes a
    /// kept buffer now if one fits, so that its copies do not have to.
    fn new(size: u64, pool: &mut Pool) -> Pages {
        let Ok(len) = usize::try_from(size) else {
            return Pages::Sparse(HashMap::new());
        };
        let buf = if size <= DENSE_MAX {
            pool.take(len).map(Buf::Heap)
        } else {
            // Address space only; a refusal (more than the OS will promise)
            // falls back to pages made one by one.
            match MmapMut::map_anon(len) {
                Ok(m) => Some(Buf::Map(m)),
                Err(_) => return Pages::Sparse(HashMap::new()),
            }
        };
        Pages::Dense {
            buf,
            size: len,
            written: vec![0; len.div_ceil(PAGE).div_ceil(64)],
        }
    }

    /// 4 KiB pages holding bytes.
    fn stored(&self) -> usize {
        match self {
            Pages::Dense { written, .. } => written.iter().map(|w| w.count_ones() as usize).sum(),
            Pages::Sparse(p) => p.len(),
            Pages::Shared { len, .. } => len.div_ceil(PAGE),
        }
    }

    /// Keeps a reference to `data` in `owner` instead of copying it, when
    /// it is the first write to a fresh mapped allocation and starts it;
    /// false leaves the pages as they were, for a copy.
    fn adopt(&mut self, owner: &SharedBytes, offset: u64, data: &[u8]) -> bool {
        let Pages::Dense {
            buf: Some(Buf::Map(_)),
            size,
            written,
        } = self
        else {
            return false;
        };
        let Some(start) = owner.offset_of(data) else {
            return false;
        };
        if offset != 0 || data.len() > *size || written.iter().any(|&w| w != 0) {
            return false;
        }
        *self = Pages::Shared {
            owner: owner.clone(),
            start,
            len: data.len(),
            size: *size,
        };
        true
    }

    fn write(&mut self, offset: u64, data: &[u8]) {
        match self {
            Pages::Shared {
                owner,
                start,
                len,
                size,
            } => {
                // Copy out, then write: the shared bytes never change.
                let mut own = Pages::new(*size as u64, &mut Pool::default());
                own.write(0, &owner[*start..*start + *len]);
                own.write(offset, data);
                *self = own;
            }
            Pages::Dense {
                buf: Some(Buf::Map(m)),
                written,
                ..
            } => {
                // A fresh mapping reads as zeros: nothing stale to clear, and
                // a zero write need only reach pages already written (so a
                // zeroed tensor costs no memory).
                if all_zero(data) {
                    for (page, in_page, at, n) in pieces(offset, data.len()) {
                        if written[(page / 64) as usize] & (1u64 << (page % 64)) != 0 {
                            let start = page as usize * PAGE + in_page;
                            m[start..start + n].copy_from_slice(&data[at..at + n]);
                        }
                    }
                    return;
                }
                let at = offset as usize;
                // Fault the destination in one call rather than page by
                // page during the copy; an older kernel refuses, and the
                // copy then faults as usual.
                #[cfg(target_os = "linux")]
                if data.len() >= POPULATE_MIN {
                    let _ = m.advise_range(memmap2::Advice::PopulateWrite, at, data.len());
                }
                m[at..at + data.len()].copy_from_slice(data);
                for (page, ..) in pieces(offset, data.len()) {
                    written[(page / 64) as usize] |= 1u64 << (page % 64);
                }
            }
            Pages::Dense { buf, size, written } => {
                if buf.is_none() && all_zero(data) {
                    return; // nothing to store yet, and nothing stored to overwrite
                }
                let b = buf.get_or_insert_with(|| Buf::Heap(vec![0u8; *size]));
                let at = offset as usize;
                b[at..at + data.len()].copy_from_slice(data);
                // A page written for the first time may hold stale bytes of a
                // reused buffer around the copy: clear them.
                for (page, in_page, _, n) in pieces(offset, data.len()) {
                    let (word, bit) = ((page / 64) as usize, 1u64 << (page % 64));
                    if written[word] & bit == 0 {
                        let start = page as usize * PAGE;
                        b[start..start + in_page].fill(0);
                        b[start + in_page + n..(start + PAGE).min(*size)].fill(0);
                        written[word] |= bit;
                    }
                }
            }
            Pages::Sparse(pages) => {
                for (page, in_page, at, n) in pieces(offset, data.len()) {
                    let src = &data[at..at + n];
                    match pages.get_mut(&page) {
                        Some(stored) => stored[in_page..in_page + n].copy_from_slice(src),
                        None if all_zero(src) => {}
                        None if n == PAGE => {
                            pages.insert(page, Box::from(src));
                        }
                        None => {
                            let mut stored = vec![0u8; PAGE].into_boxed_slice();
                            stored[in_page..in_page + n].copy_from_slice(src);
                            pages.insert(page, stored);
                        }
                    }
                }
            }
        }
    }

    fn read(&self, offset: u64, out: &mut [u8]) {
        match self {
            Pages::Dense {
                buf: Some(b),
                written,
                ..
            } => {
                for (page, in_page, at, n) in pieces(offset, out.len()) {
                    let dst = &mut out[at..at + n];
                    if written[(page / 64) as usize] & (1u64 << (page % 64)) != 0 {
                        let start = page as usize * PAGE + in_page;
                        dst.copy_from_slice(&b[start..start + n]);
                    } else {
                        dst.fill(0);
                    }
                }
            }
            Pages::Dense { buf: None, .. } => out.fill(0),
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
    pool: Pool,
}

impl SimStorage {
    /// The storage of a device of `geometry` as a started runtime leaves
    /// it ([`HbmAllocator::started`]).
    pub fn new(geometry: &Geometry, start: StartTaken) -> SimStorage {
        SimStorage {
            inner: Mutex::new(Inner {
                heap: HbmAllocator::started(geometry, start),
                stores: HashMap::new(),
                pool: Pool::default(),
            }),
        }
    }

    /// Number of 4 KiB pages currently holding bytes, over all allocations.
    pub fn stored_pages(&self) -> usize {
        self.lock()
            .stores
            .values()
            .map(|p| lock_pages(p).stored())
            .sum()
    }

    /// Of [`SimStorage::stored_pages`], those held by reference to a
    /// loader's buffer rather than copied (large weights).
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
    pub fn stored_pages(&self) -> usize {
        self.storage().stored_pages()
    }

    /// Pages held by reference to a loader's buffer.
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
        let Inner { heap, stores, pool } = &mut *self.lock();
        let block = heap.alloc(channel, size, align, place)?;
        stores.insert(handle, Arc::new(Mutex::new(Pages::new(size, pool))));
        Ok(block)
    }

    fn release(&self, handle: MemHandle, block: &Block) -> Result<(), String> {
        let store = {
            let mut inner = self.lock();
            inner.heap.free(block)?;
            inner.stores.remove(&handle)
        };
        // Keep a dense buffer for a later allocation (unless a copy still
        // holds it). Whatever is not kept, sparse pages included, is freed
        // here, outside the table's lock.
        if let Some(Ok(m)) = store.map(Arc::try_unwrap) {
            if let Pages::Dense {
                buf: Some(Buf::Heap(buf)),
                ..
            } = m.into_inner().unwrap_or_else(PoisonError::into_inner)
            {
                let unkept = self.lock().pool.give(buf); // the lock ends with this statement
                drop(unkept);
            }
        }
        Ok(())
    }

    fn write(&self, copies: &[CopyIn<'_>]) {
        let stores: Vec<Option<Store>> = {
            let inner = self.lock();
            copies
                .iter()
                .map(|c| inner.stores.get(&c.handle).cloned())
                .collect()
        };
        for (c, store) in copies.iter().zip(stores) {
            let Some(store) = store else { continue };
            let mut pages = lock_pages(&store);
            if !c.shared.is_some_and(|o| pages.adopt(o, c.offset, c.data)) {
                pages.write(c.offset, c.data);
            }
        }
    }

    fn read(&self, handle: MemHandle, offset: u64, out: &mut [u8]) -> Result<(), DeviceError> {
        let store = self.store(handle)?;
        lock_pages(&store).read(offset, out);
        Ok(())
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

    #[test]
    fn reused_buffers_never_show_stale_bytes() {
        let d = SimDevice::new(Geometry::for_arch(Arch::Sunda));
        let a = d.alloc(req(1 << 20)).unwrap();
        d.write(a.handle, 0, &vec![0xAA; 1 << 20]).unwrap();
        d.free(a.handle).unwrap();
        assert_eq!(d.storage().lock().pool.len(), 1, "the buffer is kept");
        let b = d.alloc(req(1 << 19)).unwrap();
        assert_eq!(
            d.storage().lock().pool.len(),
            0,
            "the kept buffer is handed over"
        );
        let mut back = vec![1u8; 1 << 19];
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
        // A whole-page write needs no clearing.
        d.write(b.handle, 8192, &[3u8; 4096]).unwrap();
        d.read(b.handle, 8192, &mut page).unwrap();
        assert!(page.iter().all(|&x| x == 3));
        // The buffer goes back whole, and the pool counts all of it.
        d.free(b.handle).unwrap();
        let inner = d.storage().lock();
        assert_eq!(inner.pool.bytes, 1 << 20);
        assert_eq!(inner.pool.bufs.keys().collect::<Vec<_>>(), [&(1 << 20)]);
    }

    proptest::proptest! {
        /// Writes of data and of zeros, anywhere, into a reused buffer full of
        /// stale bytes read back exactly as a plain byte array would, and
        /// exactly the pages written count as stored.
        #[test]
        fn writes_read_back_like_a_plain_array(
            writes in proptest::collection::vec((0usize..40_000, 0usize..10_000, 0u8..3), 1..12)
        ) {
            const SIZE: usize = 40_000;
            let d = SimDevice::new(Geometry::for_arch(Arch::Sunda));
            // A longer buffer than the allocation, full of stale bytes.
            let stale = d.alloc(req(SIZE as u64 + 10_000)).unwrap();
            d.write(stale.handle, 0, &vec![0xEE; SIZE + 10_000]).unwrap();
            d.free(stale.handle).unwrap();
            let a = d.alloc(req(SIZE as u64)).unwrap();
            assert_eq!(d.storage().lock().pool.len(), 0, "the stale buffer is handed over");
            let mut model = vec![0u8; SIZE];
            let mut stored = vec![false; SIZE.div_ceil(PAGE)];
            for (i, &(at, len, kind)) in writes.iter().enumerate() {
                let len = len.min(SIZE - at);
                // kind 0: zeros; 1: data; 2: zeros with one byte set at the end.
                let mut data = vec![if kind == 1 { i as u8 | 1 } else { 0 }; len];
                if kind == 2 && len > 0 {
                    data[len - 1] = 9;
                }
                d.write(a.handle, at as u64, &data).unwrap();
                model[at..at + len].copy_from_slice(&data);
                for (p, ..) in pieces(at as u64, len) {
                    stored[p as usize] = true;
                }
            }
            let mut back = vec![1u8; SIZE];
            d.read(a.handle, 0, &mut back).unwrap();
            proptest::prop_assert!(back == model, "read-back differs from the model");
            proptest::prop_assert_eq!(d.stored_pages(), stored.iter().filter(|&&s| s).count());
        }
    }

    /// An allocation above [`DENSE_MAX`] is one mapping: writes of data and
    /// zeros read back like a plain array, only pages that took non-zero
    /// bytes (or were written before) count as stored, and its memory goes
    /// back to the OS when freed, not to the pool.
    #[test]
    fn large_allocations_are_one_mapping_written_like_a_plain_array() {
        let size = DENSE_MAX as usize + 3 * PAGE + 100;
        let d = SimDevice::new(Geometry::for_arch(Arch::Sunda));
        let a = d.alloc(req(size as u64)).unwrap();
        let store = d.storage().store(a.handle).unwrap();
        assert!(matches!(
            &*lock_pages(&store),
            Pages::Dense {
                buf: Some(Buf::Map(_)),
                ..
            }
        ));
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
        assert_eq!(d.storage().lock().pool.len(), 0, "a mapping is not pooled");
    }

    /// The pages behind `handle`, to see how they are held.
    fn pages_of(d: &SimDevice, handle: MemHandle) -> Store {
        d.storage().store(handle).unwrap()
    }

    #[test]
    fn large_writes_from_a_shared_buffer_are_kept_by_reference_until_written() {
        let size = DENSE_MAX as usize + PAGE + 10;
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

    #[test]
    fn shared_bytes_are_copied_unless_they_fill_a_fresh_large_allocation() {
        let size = DENSE_MAX as usize + PAGE;
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
        let small = d.alloc(req(1 << 20)).unwrap();
        assert!(!shared(small.handle, 0, &owner[..1 << 20]), "a heap buffer");
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
