//! `SimDevice`: the default backend. Real allocator and ledger, and a sparse
//! byte store so that what the loader writes can be read back at the address
//! it baked into instructions and rings.
//!
//! Storage is per allocation, in 4 KiB pages created on first write: a NEFF
//! may declare a 4 GiB tensor and write a few bytes of it, and that must cost
//! a few pages of host memory, not 4 GiB. A write of all-zero bytes to a page
//! that does not exist yet creates nothing, since unwritten bytes already
//! read back as 0.
//!
//! Each allocation's pages sit behind their own lock: the device lock is held
//! only to check a copy against the books, so per-core builds on several
//! threads copy their bytes in parallel.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::books::Books;
use super::fault::FaultPlan;
use super::geometry::{Geometry, GRANULE};
use super::ledger::Ledger;
use super::{AllocReq, Allocation, Device, DeviceError, LiveAlloc, MemHandle};
use crate::ids::Pa;

const PAGE: usize = GRANULE as usize;

/// The stored pages of one allocation, keyed by page index within it.
type Pages = HashMap<u64, Box<[u8]>>;

/// One allocation's pages, shared between the table and a copy in flight.
type Store = Arc<Mutex<Pages>>;

#[derive(Debug)]
struct Inner {
    books: Books,
    pages: HashMap<MemHandle, Store>,
}

fn lock_pages(store: &Store) -> MutexGuard<'_, Pages> {
    store.lock().unwrap_or_else(PoisonError::into_inner)
}

/// True when every byte is zero; scans in blocks that vectorise.
fn all_zero(bytes: &[u8]) -> bool {
    bytes
        .chunks(256)
        .all(|c| c.iter().fold(0u8, |acc, &b| acc | b) == 0)
}

/// A simulated device that keeps written bytes sparsely.
#[derive(Debug)]
pub struct SimDevice {
    geometry: Geometry,
    inner: Mutex<Inner>,
}

impl SimDevice {
    pub fn new(geometry: Geometry) -> SimDevice {
        let books = Books::new(&geometry);
        SimDevice {
            geometry,
            inner: Mutex::new(Inner {
                books,
                pages: HashMap::new(),
            }),
        }
    }

    /// Number of 4 KiB pages currently holding bytes, over all allocations.
    pub fn stored_pages(&self) -> usize {
        self.lock()
            .pages
            .values()
            .map(|p| lock_pages(p).len())
            .sum()
    }

    /// Reads `out.len()` bytes at device address `pa`; the range must lie in
    /// one live allocation. This is how tests check what a relocated
    /// instruction or descriptor points at.
    pub fn read_pa(&self, pa: Pa, out: &mut [u8]) -> Result<(), DeviceError> {
        let store = {
            let inner = self.lock();
            let (handle, offset) = inner.books.resolve(pa, out.len())?;
            (inner.pages.get(&handle).cloned(), offset)
        };
        let (store, offset) = store;
        read_pages(store.as_ref().map(lock_pages).as_deref(), offset, out);
        Ok(())
    }

    /// Free bytes left on an HBM channel.
    pub fn free_bytes(&self, channel: u32) -> u64 {
        self.lock().books.free_bytes(channel)
    }

    /// A poisoned lock only means another thread panicked mid-call; the books
    /// are updated in an order that keeps them consistent, so carry on.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
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

fn read_pages(pages: Option<&Pages>, offset: u64, out: &mut [u8]) {
    for (page, in_page, at, n) in pieces(offset, out.len()) {
        let dst = &mut out[at..at + n];
        match pages.and_then(|p| p.get(&page)) {
            Some(stored) => dst.copy_from_slice(&stored[in_page..in_page + n]),
            None => dst.fill(0),
        }
    }
}

impl Device for SimDevice {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn alloc(&self, req: AllocReq<'_>) -> Result<Allocation, DeviceError> {
        self.lock().books.alloc(&req)
    }

    fn free(&self, handle: MemHandle) -> Result<(), DeviceError> {
        let mut inner = self.lock();
        inner.books.free(handle)?;
        inner.pages.remove(&handle);
        Ok(())
    }

    fn write(&self, handle: MemHandle, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        let store = {
            let mut inner = self.lock();
            inner.books.check_write(handle, offset, data.len())?;
            inner.pages.entry(handle).or_default().clone()
        };
        let mut pages = lock_pages(&store);
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
        Ok(())
    }

    fn read(&self, handle: MemHandle, offset: u64, out: &mut [u8]) -> Result<(), DeviceError> {
        let store = {
            let inner = self.lock();
            inner.books.check_read(handle, offset, out.len())?;
            inner.pages.get(&handle).cloned()
        };
        read_pages(store.as_ref().map(lock_pages).as_deref(), offset, out);
        Ok(())
    }

    fn ledger(&self) -> Ledger {
        self.lock().books.ledger()
    }

    fn live_count(&self) -> usize {
        self.lock().books.live_count()
    }

    fn live_allocations(&self) -> Vec<LiveAlloc> {
        self.lock().books.live_allocations()
    }

    fn set_fault_plan(&self, plan: FaultPlan) {
        self.lock().books.set_fault_plan(plan);
    }

    fn fault_plan(&self) -> FaultPlan {
        self.lock().books.fault_plan()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Arch;
    use crate::device::MemUsage;
    use crate::ids::PCore;

    fn req(size: u64) -> AllocReq<'static> {
        AllocReq {
            size,
            align: 0,
            core: PCore(0),
            usage: MemUsage::Weight,
            hint: "t",
        }
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
