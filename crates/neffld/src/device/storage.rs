//! What a device backend does, and nothing else: place an allocation in
//! HBM, give it back, copy bytes in and out. A driver would implement this
//! trait with its allocation, free and copy ioctls (docs/reference/stage.md §13.2);
//! the simulated backends ([`super::SimStorage`], [`super::NullStorage`])
//! place with the kernel-like [`super::alloc::HbmAllocator`].
//!
//! Everything that is the runtime's rather than the driver's — which core
//! and usage an allocation is charged to, who owns it, bounds checks, fault
//! injection, observers — is the bookkeeping layer's ([`super::Device`]),
//! so it is written once for every backend. A backend is only ever called
//! with a request or a copy that layer has already checked.

use std::fmt;

use super::alloc::{AllocFailure, Block, Place};
use super::{DeviceError, MemHandle};
use crate::shared::SharedBytes;

/// One checked copy into an allocation.
#[derive(Clone, Copy, Debug)]
pub struct CopyIn<'a> {
    pub handle: MemHandle,
    /// Device address of the allocation's first byte.
    pub base: u64,
    /// Where in the allocation the bytes go; `offset + data.len()` is
    /// within it.
    pub offset: u64,
    pub data: &'a [u8],
    /// The buffer `data` lies in, when the backend may keep a reference to
    /// it instead of a copy (weights, from the inflated payload).
    pub shared: Option<&'a SharedBytes>,
}

/// A device backend: placement and bytes.
pub trait Storage: Send + Sync + fmt::Debug {
    /// Places `size` bytes, aligned to `align` (0 or a power of two), on
    /// HBM `channel`, for the allocation the bookkeeping layer calls
    /// `handle`, where `place` says.
    fn allocate(
        &self,
        handle: MemHandle,
        channel: u32,
        size: u64,
        align: u64,
        place: Place,
    ) -> Result<Block, AllocFailure>;

    /// Gives a placed block back; its bytes are gone.
    fn release(&self, handle: MemHandle, block: &Block) -> Result<(), String>;

    /// Performs the copies in order; one the backend cannot keep (the host
    /// has no memory for it) fails with its index, the ones before it done.
    fn write(&self, copies: &[CopyIn<'_>]) -> Result<(), (usize, DeviceError)>;

    /// Copies `out.len()` bytes out of an allocation at `offset` (within
    /// it); bytes never written read as 0. A backend that keeps no bytes
    /// refuses with [`DeviceError::NoStorage`].
    fn read(&self, handle: MemHandle, offset: u64, out: &mut [u8]) -> Result<(), DeviceError>;

    /// Bytes still free on an HBM channel (for out-of-memory reports).
    fn free_bytes(&self, channel: u32) -> u64;

    /// Each pool of a channel: its free bytes and its longest free range
    /// (empty when the storage does not keep pools).
    fn pools(&self, _channel: u32) -> Vec<super::alloc::PoolFree> {
        Vec::new()
    }

    /// Whether what is written can be told afterwards (bytes kept, or a
    /// checksum of them): a load that writes nothing is then not the same
    /// as one that writes.
    fn keeps_writes(&self) -> bool {
        true
    }

    /// Bytes a channel can hand out in all, free or not: its size less the
    /// firmware carve-out and what the runtime held before it started
    /// allocating.
    fn capacity(&self, channel: u32) -> u64;
}
