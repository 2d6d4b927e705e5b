//! S4: staging — plan device memory for every variable of every subgraph,
//! then build each subgraph's device image on its own physical core, in
//! parallel and all-or-nothing (stage.md §5–§9, §12): what a load stages
//! belongs to the guards of [`txn`] until the load commits.
//!
//! Only this module (and the registry above it) touches a [`Device`]. The
//! relocation it needs is the pure [`crate::relocate`]: planning produces
//! addresses, relocation turns NEFF bytes into device bytes, and the core
//! build writes them.

pub mod core;
pub mod fanout;
pub mod plan;
pub mod replay;
pub mod scratchpad;
pub mod txn;
pub mod validate;

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};

use thiserror::Error;

use crate::device::DeviceError;
use crate::ids::{HModel, PCore};
use crate::relocate::RelocError;
use crate::NrtStatus;

pub use self::core::CoreImage;
#[cfg(any(test, feature = "testkit"))]
pub use self::core::PlacedImage;
#[cfg(any(test, feature = "testkit"))]
pub use fanout::bulk_bytes;
pub use fanout::{panic_message, stage, StageOptions, DEFAULT_FANOUT_MIN_BYTES};
pub use plan::Placement;
pub use replay::Recipes;
pub use scratchpad::{Scratchpad, ScratchpadMode};

/// Whose scratchpad could not be had, for a refusal of its pages: the
/// subgraph and core, what it needs in which pages, and the virtual
/// variable that reaches furthest (the one to look at in the NEFF).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScratchpadNeed {
    pub subgraph: String,
    pub core: PCore,
    pub bytes: u64,
    pub page: u64,
    /// `, the most for virtual variable X of SG (backing_variable_off …,
    /// size …)`, or empty when no variable of the load is the cause.
    pub by: String,
}

impl std::fmt::Display for ScratchpadNeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} on {} needs {} bytes of scratchpad in {}-byte pages{}",
            self.subgraph, self.core, self.bytes, self.page, self.by
        )
    }
}

/// Everything staging can fail on. Messages keep the reference wording
/// (stage.md §14) where one exists.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StageError {
    #[error("Insufficient number of pncs, required {required}, available {available}")]
    InsufficientCores { required: usize, available: usize },
    #[error("{what} of {subgraph}: {source}")]
    Device {
        subgraph: String,
        what: String,
        source: DeviceError,
    },
    #[error("Failed to allocate virtual scratchpad! {source}: {need}")]
    Scratchpad {
        source: DeviceError,
        need: ScratchpadNeed,
    },
    #[error("Number of scratchpad pages requested exceeded the max (requested: {requested}, max: {max}): {need}")]
    ScratchpadPages {
        requested: u64,
        max: u64,
        need: ScratchpadNeed,
    },
    #[error("Failed to calculate scratchpad info: {0}")]
    ScratchpadLayout(String),
    #[error("{subgraph}: {source}")]
    Reloc {
        subgraph: String,
        source: RelocError,
    },
    #[error("Model {0} already in DB")]
    ModelInDb(u32),
    #[error("staging thread for {subgraph} panicked: {message}")]
    Panicked { subgraph: String, message: String },
}

impl StageError {
    pub fn status(&self) -> NrtStatus {
        match self {
            StageError::Device { source, .. } | StageError::Scratchpad { source, .. } => {
                source.status()
            }
            StageError::ScratchpadPages { .. } => NrtStatus::Resource,
            StageError::ScratchpadLayout(_) | StageError::Panicked { .. } => NrtStatus::Failure,
            StageError::Reloc { source, .. } => source.status(),
            StageError::ModelInDb(_) => NrtStatus::InvalidHandle,
            _ => NrtStatus::Invalid,
        }
    }
}

/// What each physical core keeps for the runtime's lifetime: its scratchpad
/// page table and its model table (keyed by `H_MODEL`).
#[derive(Debug)]
pub struct CoreState {
    pub scratchpad: Scratchpad,
    pub models: BTreeSet<HModel>,
}

/// The per-core states of a device, each behind its own lock.
#[derive(Debug)]
pub struct Cores {
    cores: Vec<Mutex<CoreState>>,
}

impl Cores {
    /// `count` cores, each with an empty scratchpad laid out as `mode` says.
    pub fn new(count: u32, mode: ScratchpadMode) -> Cores {
        Cores {
            cores: (0..count)
                .map(|_| {
                    Mutex::new(CoreState {
                        scratchpad: Scratchpad::new(mode),
                        models: BTreeSet::new(),
                    })
                })
                .collect(),
        }
    }

    /// Locks one core's state (a poisoned lock is recovered: the state is
    /// only ever changed by complete operations).
    pub fn lock(&self, core: PCore) -> MutexGuard<'_, CoreState> {
        self.cores[core.0 as usize]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}
