//! Staging is a transaction: everything a load puts on a core belongs to
//! that core's [`super::CoreImage`] — its plan's allocations and scratchpad
//! references, its build's allocations, and its entry in the core's model
//! table ([`TableEntry`]) — and dropping the image puts all of it back. A
//! load that fails or panics, on the caller's thread or a fan-out thread,
//! drops its images; a registered model keeps them until it is unloaded,
//! which drops them. Nothing is freed by hand on any path.

use std::sync::Arc;

use crate::ids::{HModel, PCore};

use super::{Cores, StageError};

/// A load's `H_MODEL` in one core's model table (the last step of a core's
/// build); removed when dropped.
#[derive(Debug)]
pub struct TableEntry {
    cores: Arc<Cores>,
    core: PCore,
    h_model: HModel,
}

impl TableEntry {
    /// Enters `h_model` in `core`'s model table.
    pub fn enter(
        cores: &Arc<Cores>,
        core: PCore,
        h_model: HModel,
    ) -> Result<TableEntry, StageError> {
        if !cores.lock(core).models.insert(h_model) {
            return Err(StageError::ModelInDb(h_model.0));
        }
        Ok(TableEntry {
            cores: Arc::clone(cores),
            core,
            h_model,
        })
    }
}

impl Drop for TableEntry {
    fn drop(&mut self) {
        self.cores.lock(self.core).models.remove(&self.h_model);
    }
}
