//! `NullDevice`: the allocator and ledger of [`super::SimDevice`] without the
//! bytes. For NEFFs too large to mirror in host memory, when only "does it
//! load, where, and with how much memory" matters.
//!
//! Writes are bounds-checked and folded into a checksum so two loads can
//! still be compared. Reads are bounds-checked and then refused with
//! [`DeviceError::NoStorage`]: returning zeros would let a test that meant to
//! inspect bytes pass without looking at anything.
//!
//! The checksum is the wrapping sum, over every write, of a 64-bit FNV-1a
//! hash of (device address, bytes). A sum does not depend on the order of
//! writes, so per-core builds on several threads give the same value; it does
//! depend on how the bytes were split into writes, and on overwrites.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::books::Books;
use super::fault::FaultPlan;
use super::geometry::Geometry;
use super::ledger::Ledger;
use super::{AllocReq, Allocation, Device, DeviceError, LiveAlloc, MemHandle};

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

/// The checksum contribution of writing `data` at device address `pa`.
pub fn write_digest(pa: u64, data: &[u8]) -> u64 {
    fnv1a(fnv1a(FNV_OFFSET, &pa.to_le_bytes()), data)
}

#[derive(Debug)]
struct Inner {
    books: Books,
    checksum: u64,
    bytes_written: u64,
    writes: u64,
}

/// A device that keeps no bytes, only a checksum of them.
#[derive(Debug)]
pub struct NullDevice {
    geometry: Geometry,
    inner: Mutex<Inner>,
}

impl NullDevice {
    pub fn new(geometry: Geometry) -> NullDevice {
        let books = Books::new(&geometry);
        NullDevice {
            geometry,
            inner: Mutex::new(Inner {
                books,
                checksum: 0,
                bytes_written: 0,
                writes: 0,
            }),
        }
    }

    /// The running checksum of everything written (0 before any write).
    pub fn checksum(&self) -> u64 {
        self.lock().checksum
    }

    /// Total bytes accepted by successful writes.
    pub fn bytes_written(&self) -> u64 {
        self.lock().bytes_written
    }

    /// Number of successful writes.
    pub fn writes(&self) -> u64 {
        self.lock().writes
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Device for NullDevice {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn alloc(&self, req: AllocReq<'_>) -> Result<Allocation, DeviceError> {
        self.lock().books.alloc(&req)
    }

    fn free(&self, handle: MemHandle) -> Result<(), DeviceError> {
        self.lock().books.free(handle)
    }

    fn write(&self, handle: MemHandle, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        let mut inner = self.lock();
        let span = inner.books.check_write(handle, offset, data.len())?;
        let digest = write_digest(span.alloc_pa + offset, data);
        inner.checksum = inner.checksum.wrapping_add(digest);
        inner.bytes_written += data.len() as u64;
        inner.writes += 1;
        Ok(())
    }

    fn read(&self, handle: MemHandle, offset: u64, out: &mut [u8]) -> Result<(), DeviceError> {
        self.lock().books.check_read(handle, offset, out.len())?;
        Err(DeviceError::NoStorage { handle })
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

    #[test]
    fn fnv_matches_the_reference_vectors() {
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(FNV_OFFSET, b"foobar"), 0x8594_4171_f739_67e8);
    }
}
