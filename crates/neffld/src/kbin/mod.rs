//! S3: one owned [`Kbin`] record per subgraph, built from the manifests
//! (parse.md §7), then the post-build checks: trigger ↔ block linkage,
//! ADDR8 operands, cross-subgraph remote variables and the subgraph count.
//!
//! Instruction streams and tables stay where S1 put them: a kbin holds
//! [`Blob`](crate::manifest::Blob) ranges into the archive's decoded buffer,
//! so the caller keeps the [`Neff`](crate::container::Neff) alive beside it.

pub mod build;
pub mod isa;
pub mod vars;

use thiserror::Error;

pub use build::{build, DmaRing, EngineProgram, Kbin};
pub use vars::{ScratchpadSizes, VarTable};

use crate::NrtStatus;

/// Everything the KBIN build can reject. All map to `NRT_INVALID`.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum KbinError {
    #[error("DMA trigger {queue}/{id} in {stream} has no matching block (instruction {instr})")]
    TriggerWithoutBlock {
        queue: String,
        id: u32,
        stream: String,
        instr: u64,
    },
    #[error("DMA block {queue}/{id} in {stream} is never triggered")]
    BlockNeverTriggered {
        queue: String,
        id: u64,
        stream: String,
    },
    #[error("DMA block {queue}/{id} in {stream} is triggered {count} times (expected once)")]
    BlockTriggeredTwice {
        queue: String,
        id: u32,
        stream: String,
        count: u64,
    },
    #[error("invalid var_id {var_id} in instruction {instr} of {stream}")]
    Addr8VarId {
        var_id: u32,
        instr: u64,
        stream: String,
    },
    #[error("invalid DGE index {index} in instruction {instr} of {stream} (the dge-table list has {len} entries)")]
    Addr8DgeIndex {
        index: u16,
        instr: u64,
        stream: String,
        len: usize,
    },
    #[error("unsupported ADDR8 mode {mode:#x} in instruction {instr} of {stream}")]
    Addr8Mode {
        mode: u8,
        instr: u64,
        stream: String,
    },
    #[error("invalid offset in {var}, {size} <= {offset} (instruction {instr} of {stream})")]
    Addr8OutOfBounds {
        var: String,
        instr: u64,
        stream: String,
        offset: u64,
        size: u64,
    },
    #[error("Failed to resolve remote variables for subgraphs {first} to {last}: {detail}")]
    RemoteUnresolved {
        first: usize,
        last: usize,
        detail: String,
    },
    #[error("NEFF has {count} subgraphs, which do not fit one logical core of size {lnc}")]
    SubgraphCount { count: usize, lnc: u32 },
}

impl KbinError {
    pub fn status(&self) -> NrtStatus {
        NrtStatus::Invalid
    }
}
