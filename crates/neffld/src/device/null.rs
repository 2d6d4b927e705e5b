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

use super::alloc::{AllocFailure, Block, HbmAllocator, Place};
use super::geometry::Geometry;
use super::storage::{CopyIn, Storage};
use super::{Device, DeviceError, MemHandle, NullDevice, StartTaken};

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

/// The backend that keeps no bytes: placement, and counts (and on request
/// a checksum) of what is written.
#[derive(Debug)]
pub struct NullStorage {
    heap: Mutex<HbmAllocator>,
    counts: Mutex<Counts>,
}

#[derive(Debug)]
struct Counts {
    /// `None` when the storage keeps no checksum.
    checksum: Option<u64>,
    bytes_written: u64,
    writes: u64,
}

impl NullStorage {
    /// The storage of a device of `geometry` as a started runtime leaves it
    /// ([`HbmAllocator::started`]); `checksum` keeps one of every write.
    pub fn new(geometry: &Geometry, start: StartTaken, checksum: bool) -> NullStorage {
        NullStorage {
            heap: Mutex::new(HbmAllocator::started(geometry, start)),
            counts: Mutex::new(Counts {
                checksum: checksum.then_some(0),
                bytes_written: 0,
                writes: 0,
            }),
        }
    }

    fn heap(&self) -> MutexGuard<'_, HbmAllocator> {
        self.heap.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn counts(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl NullDevice {
    /// A device that counts writes but keeps no checksum of them.
    #[cfg(any(test, feature = "testkit"))]
    pub fn new(geometry: Geometry) -> NullDevice {
        NullDevice::make(geometry, StartTaken::default(), false)
    }

    /// A device that also keeps a checksum of everything written.
    #[cfg(any(test, feature = "testkit"))]
    pub fn with_checksum(geometry: Geometry) -> NullDevice {
        NullDevice::make(geometry, StartTaken::default(), true)
    }

    /// The device as a started runtime leaves it ([`super::SimDevice::as_started`]).
    pub fn as_started(geometry: Geometry, start: StartTaken) -> NullDevice {
        NullDevice::make(geometry, start, false)
    }

    fn make(geometry: Geometry, start: StartTaken, checksum: bool) -> NullDevice {
        let storage = NullStorage::new(&geometry, start, checksum);
        Device::over(geometry, storage)
    }

    /// The running checksum of everything written (0 before any write);
    /// `None` unless the device was made [`NullDevice::with_checksum`].
    #[cfg(any(test, feature = "testkit"))]
    pub fn checksum(&self) -> Option<u64> {
        self.storage().counts().checksum
    }

    /// Total bytes accepted by successful writes.
    #[cfg(any(test, feature = "testkit"))]
    pub fn bytes_written(&self) -> u64 {
        self.storage().counts().bytes_written
    }

    /// Number of successful writes.
    #[cfg(any(test, feature = "testkit"))]
    pub fn writes(&self) -> u64 {
        self.storage().counts().writes
    }
}

impl Storage for NullStorage {
    fn allocate(
        &self,
        _handle: MemHandle,
        channel: u32,
        size: u64,
        align: u64,
        place: Place,
    ) -> Result<Block, AllocFailure> {
        self.heap().alloc(channel, size, align, place)
    }

    fn release(&self, _handle: MemHandle, block: &Block) -> Result<(), String> {
        self.heap().free(block)
    }

    fn write(&self, copies: &[CopyIn<'_>]) -> Result<(), (usize, DeviceError)> {
        // Hashed outside the lock, so builds on several threads hash at once.
        let keeps_checksum = self.counts().checksum.is_some();
        let digest = keeps_checksum.then(|| {
            copies.iter().fold(0u64, |sum, c| {
                sum.wrapping_add(write_digest(c.base + c.offset, c.data))
            })
        });
        let mut counts = self.counts();
        if let (Some(sum), Some(d)) = (counts.checksum.as_mut(), digest) {
            *sum = sum.wrapping_add(d);
        }
        counts.bytes_written += copies.iter().map(|c| c.data.len() as u64).sum::<u64>();
        counts.writes += copies.len() as u64;
        Ok(())
    }

    fn read(&self, handle: MemHandle, _offset: u64, _out: &mut [u8]) -> Result<(), DeviceError> {
        Err(DeviceError::NoStorage { handle })
    }

    fn pools(&self, channel: u32) -> Vec<super::alloc::PoolFree> {
        self.heap().pools(channel)
    }

    fn free_bytes(&self, channel: u32) -> u64 {
        self.heap().free_bytes(channel)
    }

    /// Only the checksum, when kept, tells writes apart (the counts are
    /// diagnostics).
    fn keeps_writes(&self) -> bool {
        self.counts().checksum.is_some()
    }

    fn capacity(&self, channel: u32) -> u64 {
        self.heap().capacity(channel)
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
