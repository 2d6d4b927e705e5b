//! Device memory that frees itself. A load's allocations belong to sets
//! that free them when dropped — on an error return, on a panic, and at
//! unload alike — so no stage, rollback or unload path frees by hand.

use std::sync::Arc;

use super::{AllocReq, Allocation, Batch, BatchReq, Device, DeviceError, MemHandle};
use crate::device::Owner;

/// One allocation, freed when dropped.
#[derive(Debug)]
pub struct Owned {
    dev: Arc<Device>,
    alloc: Allocation,
}

impl Owned {
    /// Allocates on `dev`; the result frees itself.
    pub fn new(dev: &Arc<Device>, req: AllocReq<'_>) -> Result<Owned, DeviceError> {
        let alloc = dev.alloc(req)?;
        Ok(Owned {
            dev: Arc::clone(dev),
            alloc,
        })
    }

    pub fn allocation(&self) -> &Allocation {
        &self.alloc
    }

    pub fn handle(&self) -> MemHandle {
        self.alloc.handle
    }

    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        release(&self.dev, self.alloc.handle);
    }
}

/// Allocations made one after another on one device, freed together (last
/// first) when the set is dropped.
pub struct AllocSet {
    dev: Arc<Device>,
    held: Vec<Allocation>,
    /// Batches held as one row each: the row's first handle and its
    /// allocations.
    batches: Vec<(MemHandle, usize)>,
}

impl AllocSet {
    pub fn new(dev: &Arc<Device>) -> AllocSet {
        AllocSet {
            dev: Arc::clone(dev),
            held: Vec::new(),
            batches: Vec::new(),
        }
    }

    /// Makes `reqs` at once ([`Device::alloc_batch`]) and keeps them.
    pub fn alloc_batch(&mut self, owner: Owner, reqs: &Arc<[BatchReq]>) -> Result<(), DeviceError> {
        match self.dev.alloc_batch(owner, reqs)? {
            Batch::Row(first) => self.batches.push((first, reqs.len())),
            Batch::Each(made) => self.held.extend(made),
        }
        Ok(())
    }

    /// Allocates and keeps the allocation in the set.
    pub fn alloc(&mut self, req: AllocReq<'_>) -> Result<Allocation, DeviceError> {
        let a = self.dev.alloc(req)?;
        self.held.push(a);
        Ok(a)
    }

    pub fn len(&self) -> usize {
        self.held.len() + self.batches.iter().map(|&(_, n)| n).sum::<usize>()
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// Frees everything held now (last first); the set stays usable.
    pub fn clear(&mut self) {
        for (first, _) in self.batches.drain(..).rev() {
            if let Err(e) = self.dev.free_batch(first) {
                tracing::warn!("freeing the batch of {first}: {e}");
            }
        }
        for a in self.held.drain(..).rev() {
            release(&self.dev, a.handle);
        }
    }
}

impl std::fmt::Debug for AllocSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AllocSet")
            .field("held", &self.held)
            .field("batches", &self.batches)
            .finish()
    }
}

impl Drop for AllocSet {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Frees one allocation at teardown; a failure is logged, as nothing can be
/// done about it there.
fn release(dev: &Device, handle: MemHandle) {
    if let Err(e) = dev.free(handle) {
        tracing::warn!("freeing {handle}: {e}");
    }
}
