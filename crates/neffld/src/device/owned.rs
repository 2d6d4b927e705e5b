//! Device memory that frees itself. A load's allocations belong to sets
//! that free them when dropped — on an error return, on a panic, and at
//! unload alike — so no stage, rollback or unload path frees by hand.

use std::sync::Arc;

use super::{AllocReq, Allocation, Device, DeviceError, MemHandle};

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
}

impl AllocSet {
    pub fn new(dev: &Arc<Device>) -> AllocSet {
        AllocSet {
            dev: Arc::clone(dev),
            held: Vec::new(),
        }
    }

    /// Allocates and keeps the allocation in the set.
    pub fn alloc(&mut self, req: AllocReq<'_>) -> Result<Allocation, DeviceError> {
        let a = self.dev.alloc(req)?;
        self.held.push(a);
        Ok(a)
    }

    pub fn len(&self) -> usize {
        self.held.len()
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// Frees everything held now (last first); the set stays usable.
    pub fn clear(&mut self) {
        for a in self.held.drain(..).rev() {
            release(&self.dev, a.handle);
        }
    }
}

impl std::fmt::Debug for AllocSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.held).finish()
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
