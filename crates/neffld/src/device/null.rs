//! `NullDevice`: the allocator and ledger of [`super::SimDevice`] without the
//! bytes. For NEFFs too large to mirror in host memory, when only "does it
//! load, where, and with how much memory" matters.
//!
//! Writes are bounds-checked and counted; a device made with
//! [`NullDevice::with_checksum`] also folds them into a checksum so two loads
//! can still be compared. The checksum is opt-in because hashing every byte
//! was the whole of S4 in a one-shot load with a gigabyte of weights (264 of
//! 2,647 ms, one run on a loaded host), and nothing but a comparison reads
//! it. Reads are bounds-checked and then refused with
//! [`DeviceError::NoStorage`]: returning zeros would let a test that meant to
//! inspect bytes pass without looking at anything.
//!
//! The checksum is the wrapping sum, over every write, of a 64-bit hash of
//! (device address, bytes): FNV-1a of the address, then the bytes in four
//! interleaved lanes that take 8 bytes per multiply step (a byte-wise FNV runs
//! at a fraction of memcpy speed and made this device slower than the one
//! that stores the bytes), then the lanes and the tail folded in byte-wise.
//! A sum does not depend on the order of writes, so per-core builds on
//! several threads give the same value; it does depend on how the bytes were
//! split into writes, and on overwrites. The hash runs outside the device
//! lock, so those threads also hash in parallel.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::books::Books;
use super::fault::FaultPlan;
use super::geometry::Geometry;
use super::ledger::Ledger;
use super::{AllocReq, Allocation, Device, DeviceError, LiveAlloc, MemHandle, StartTaken};

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
const LANE_MUL: u64 = 0x9E37_79B9_7F4A_7C15;

fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

/// The checksum contribution of writing `data` at device address `pa`.
pub fn write_digest(pa: u64, data: &[u8]) -> u64 {
    let seed = fnv1a(FNV_OFFSET, &pa.to_le_bytes());
    let mut lanes = [seed, seed ^ 1, seed ^ 2, seed ^ 3];
    let mut blocks = data.chunks_exact(32);
    for block in &mut blocks {
        for (lane, word) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            let w = u64::from_le_bytes(word.try_into().expect("8-byte word"));
            // A folded 64×64→128 multiply: unlike FNV's plain multiply it
            // carries every input bit into the low half as well.
            let m = u128::from(*lane ^ w) * u128::from(LANE_MUL);
            *lane = (m as u64) ^ ((m >> 64) as u64);
        }
    }
    let mut hash = seed;
    for lane in lanes {
        hash = fnv1a(hash, &lane.to_le_bytes());
    }
    fnv1a(hash, blocks.remainder())
}

#[derive(Debug)]
struct Inner {
    books: Books,
    /// `None` when the device keeps no checksum.
    checksum: Option<u64>,
    bytes_written: u64,
    writes: u64,
}

/// A device that keeps no bytes (and, on request, a checksum of them).
#[derive(Debug)]
pub struct NullDevice {
    geometry: Geometry,
    inner: Mutex<Inner>,
}

impl NullDevice {
    /// A device that counts writes but keeps no checksum of them.
    pub fn new(geometry: Geometry) -> NullDevice {
        NullDevice::make(geometry, None, StartTaken::default())
    }

    /// A device that also keeps a checksum of everything written.
    pub fn with_checksum(geometry: Geometry) -> NullDevice {
        NullDevice::make(geometry, Some(0), StartTaken::default())
    }

    /// The device as a started runtime leaves it ([`super::SimDevice::as_started`]).
    pub fn as_started(geometry: Geometry, start: StartTaken) -> NullDevice {
        NullDevice::make(geometry, None, start)
    }

    fn make(geometry: Geometry, checksum: Option<u64>, start: StartTaken) -> NullDevice {
        let books = Books::new(&geometry, start);
        NullDevice {
            geometry,
            inner: Mutex::new(Inner {
                books,
                checksum,
                bytes_written: 0,
                writes: 0,
            }),
        }
    }

    /// The running checksum of everything written (0 before any write);
    /// `None` unless the device was made [`NullDevice::with_checksum`].
    pub fn checksum(&self) -> Option<u64> {
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
        self.lock().books.alloc(&req, || ())
    }

    fn free(&self, handle: MemHandle) -> Result<(), DeviceError> {
        self.lock().books.free(handle)
    }

    fn write(&self, handle: MemHandle, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        let (alloc_pa, keeps_checksum) = {
            let mut inner = self.lock();
            let pa = inner
                .books
                .check_write(handle, offset, data.len())?
                .alloc_pa;
            (pa, inner.checksum.is_some())
        };
        // Hashed outside the lock, so builds on several threads hash at once.
        let digest = keeps_checksum.then(|| write_digest(alloc_pa + offset, data));
        let mut inner = self.lock();
        if let (Some(sum), Some(d)) = (inner.checksum.as_mut(), digest) {
            *sum = sum.wrapping_add(d);
        }
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

    #[test]
    fn write_digest_sees_every_byte_and_the_address() {
        let base: Vec<u8> = (0..100u8).collect();
        let d0 = write_digest(0x1000, &base);
        let mut seen = std::collections::HashSet::from([d0]);
        for i in 0..base.len() {
            for bit in 0..8 {
                let mut b = base.clone();
                b[i] ^= 1 << bit;
                assert!(seen.insert(write_digest(0x1000, &b)), "byte {i} bit {bit}");
            }
        }
        assert_ne!(write_digest(0x2000, &base), d0);
        assert_ne!(write_digest(0x1000, &base[..99]), d0);
    }
}
